//! The envelope every JSON result of iolens starts with, whatever the command: which tool and
//! command wrote it, when, on which host, for which job, with which warnings, and whether it was
//! interrupted or failed. The command's own figures (its body) follow in the same object.
//!
//! There is one envelope type and one way to build it ([`Invocation::document`]), so that the
//! keys and their meaning cannot drift apart between commands. Bodies never carry envelope keys
//! themselves; what they know about the outcome (interruption, warnings, an error) they tell
//! through [`Body`].

use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

pub use iolens_output::contract::{Body, NoBody, Notice};

/// Version of the JSON result layout; bumped on any incompatible change. 2: the envelope, and
/// one key and unit per figure in every command.
pub const SCHEMA_VERSION: u32 = 2;

/// Keys of the envelope; a body's own keys never take one of these names.
pub const ENVELOPE_KEYS: [&str; 10] = [
    "schema_version",
    "tool",
    "command",
    "started_at",
    "ended_at",
    "host",
    "job",
    "warnings",
    "interrupted",
    "error",
];

/// The program that wrote a result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tool {
    pub name: String,
    pub version: String,
    /// The commit the binary was built from, or "unknown" outside a git checkout.
    pub git_commit: String,
}

/// The machine a result was measured on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Host {
    pub hostname: String,
    /// The kernel release (`uname -r`).
    pub kernel: String,
    /// The first CPU's model name, as /proc/cpuinfo gives it; "unknown" where it names none.
    pub cpu_model: String,
    /// Online logical CPUs.
    pub cores: u32,
    pub memory_bytes: u64,
}

impl Host {
    /// This machine, read once per process.
    pub fn this() -> &'static Host {
        static HOST: OnceLock<Host> = OnceLock::new();
        HOST.get_or_init(|| {
            let proc_line = |p: &str| std::fs::read_to_string(p).map(|s| s.trim().to_string()).ok();
            let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
            // SAFETY: sysconf only reads a system setting.
            let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
            Host {
                hostname: proc_line("/proc/sys/kernel/hostname").unwrap_or_else(|| "unknown".into()),
                kernel: proc_line("/proc/sys/kernel/osrelease").unwrap_or_else(|| "unknown".into()),
                cpu_model: cpu_model(&cpuinfo).unwrap_or_else(|| "unknown".into()),
                cores: u32::try_from(online).ok().filter(|&n| n > 0).unwrap_or(1),
                memory_bytes: iolens_device::memory_total().unwrap_or(0),
            }
        })
    }
}

/// The model name of the first CPU in /proc/cpuinfo text (x86: "model name"; some other
/// architectures: "Model" or "cpu model").
fn cpu_model(cpuinfo: &str) -> Option<String> {
    cpuinfo.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        let key = key.trim();
        let named = key.eq_ignore_ascii_case("model name") || key == "Model" || key == "cpu model";
        (named && !value.trim().is_empty()).then(|| value.trim().to_string())
    })
}

/// The first keys of every JSON result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    pub schema_version: u32,
    pub tool: Tool,
    /// The command line, one string per argument.
    pub command: Vec<String>,
    /// RFC 3339, UTC, milliseconds.
    pub started_at: String,
    pub ended_at: String,
    pub host: Host,
    /// The job as it ran, every default filled in; absent where the command runs no job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<serde_json::Value>,
    pub warnings: Vec<Notice>,
    pub interrupted: bool,
    pub error: Option<Notice>,
}

/// The envelope, then the body's keys, in one JSON object.
#[derive(Debug, Serialize)]
pub struct Document<'a, B: Serialize> {
    #[serde(flatten)]
    pub envelope: Envelope,
    #[serde(flatten)]
    pub body: &'a B,
}

/// This run of the program: what every envelope it writes shares.
#[derive(Debug, Clone)]
pub struct Invocation {
    pub tool: Tool,
    pub command: Vec<String>,
    pub started: SystemTime,
}

impl Invocation {
    pub fn new(tool: Tool, command: Vec<String>) -> Invocation {
        Invocation { tool, command, started: SystemTime::now() }
    }

    /// The envelope of a result written now: the body's outcome, the job (where the command
    /// has one) and the time it ended.
    pub fn envelope(&self, body: &impl Body, job: Option<serde_json::Value>) -> Envelope {
        Envelope {
            schema_version: SCHEMA_VERSION,
            tool: self.tool.clone(),
            command: self.command.clone(),
            started_at: rfc3339(self.started),
            ended_at: rfc3339(SystemTime::now()),
            host: Host::this().clone(),
            job,
            warnings: body.warnings(),
            interrupted: body.interrupted(),
            error: body.error(),
        }
    }

    /// The whole document: envelope and body.
    pub fn document<'a, B: Body>(&self, body: &'a B, job: Option<serde_json::Value>) -> Document<'a, B> {
        debug_assert!(
            serde_json::to_value(body).map_or(true, |v| v
                .as_object()
                .is_none_or(|o| !ENVELOPE_KEYS.iter().any(|k| o.contains_key(*k)))),
            "a body holds an envelope key: the JSON would have it twice"
        );
        Document { envelope: self.envelope(body, job), body }
    }

    /// The document of a command that failed before it had a result.
    pub fn error_document(&self, error: Notice, interrupted: bool) -> Envelope {
        let mut envelope = self.envelope(&NoBody {}, None);
        envelope.error = Some(error);
        envelope.interrupted = interrupted;
        envelope
    }
}

/// `t` as RFC 3339 in UTC with milliseconds, e.g. `2026-11-23T19:12:00.123Z`.
pub fn rfc3339(t: SystemTime) -> String {
    let since = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        since.subsec_millis()
    )
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn times_are_rfc3339_utc_with_milliseconds() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        // 2000-02-29 (a leap day of a century leap year) 12:34:56.789
        let t = UNIX_EPOCH + Duration::from_millis(951_827_696_789);
        assert_eq!(rfc3339(t), "2000-02-29T12:34:56.789Z");
        let t = UNIX_EPOCH + Duration::from_secs(1_795_461_120);
        assert_eq!(rfc3339(t), "2026-11-23T19:12:00.000Z");
    }

    #[test]
    fn cpu_model_of_several_architectures() {
        assert_eq!(
            cpu_model("processor\t: 0\nmodel name\t: AMD EPYC 7B13\n").as_deref(),
            Some("AMD EPYC 7B13")
        );
        assert_eq!(cpu_model("Model\t\t: Raspberry Pi 4\n").as_deref(), Some("Raspberry Pi 4"));
        assert_eq!(cpu_model("processor : 0\n"), None);
    }

    #[derive(Serialize)]
    struct Figures {
        iops: f64,
        #[serde(skip)]
        stopped: bool,
    }

    impl Body for Figures {
        fn interrupted(&self) -> bool {
            self.stopped
        }
        fn warnings(&self) -> Vec<Notice> {
            vec![Notice::new("short_run", "ran 0.1 s")]
        }
    }

    #[test]
    fn a_document_is_the_envelope_then_the_body_in_one_object() {
        let inv = Invocation::new(
            Tool { name: "iolens".into(), version: "0.1.0".into(), git_commit: "abc".into() },
            vec!["iolens".into(), "run".into()],
        );
        let body = Figures { iops: 12.5, stopped: true };
        let v = serde_json::to_value(inv.document(&body, Some(serde_json::json!({"name": "j"})))).unwrap();
        let o = v.as_object().unwrap();
        for key in ENVELOPE_KEYS {
            assert!(o.contains_key(key), "{key} missing in {v}");
        }
        assert_eq!(v["schema_version"], SCHEMA_VERSION);
        assert_eq!(v["command"], serde_json::json!(["iolens", "run"]));
        assert_eq!(v["interrupted"], true);
        assert_eq!(v["warnings"][0]["code"], "short_run");
        assert_eq!(v["error"], serde_json::Value::Null);
        assert_eq!(v["job"]["name"], "j");
        assert_eq!(v["iops"], 12.5);
        assert!(!o.contains_key("stopped"));
        assert!(v["host"]["cores"].as_u64().unwrap() >= 1);
        assert!(v["started_at"].as_str().unwrap().ends_with('Z'));

        let e = serde_json::to_value(inv.error_document(Notice::new("bad_input", "no"), false)).unwrap();
        assert_eq!(e["error"]["code"], "bad_input");
        assert!(e.get("job").is_none());
    }
}
