//! Honest figures (issue 9): the device window is the measurement window, sparse and clamped
//! targets are named, memory-backed targets and shared devices are said, and mixed jobs report
//! reads and writes apart.

use std::path::Path;
use std::process::Output;

use serde_json::Value;

use crate::util::Env;

impl Env {
    fn run_ok(&self, args: &[&str]) -> (Value, String) {
        let json = self.path("out.json");
        let _ = std::fs::remove_file(&json);
        let out: Output = self.iolens().args(args).args(["--json", json.to_str().unwrap()]).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "iolens {args:?} failed: {}\n{stdout}",
            String::from_utf8_lossy(&out.stderr)
        );
        (serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap(), stdout)
    }
}

fn codes(v: &Value) -> Vec<String> {
    v["warnings"].as_array().unwrap().iter().map(|w| w["code"].as_str().unwrap().to_string()).collect()
}

fn warning<'a>(v: &'a Value, code: &str) -> Option<&'a str> {
    v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["code"] == code)
        .map(|w| w["message"].as_str().unwrap())
}

/// `/dev/shm` where it is tmpfs; elsewhere the test says it is skipped.
fn tmpfs_shm() -> Option<&'static Path> {
    let shm = Path::new("/dev/shm");
    let tmpfs = iolens_device::filesystem_type(shm).map(|f| f.name).ok() == Some("tmpfs");
    crate::util::require(tmpfs, "/dev/shm on tmpfs").then_some(shm)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn sparse_read_target_is_named() {
    let env = Env::new();
    let sparse = env.path("s.dat");
    std::fs::File::create(&sparse).unwrap().set_len(8 << 20).unwrap();
    let (v, stdout) = env.run_ok(&["run", "--quiet", "--target", s(&sparse), "--rw", "read", "--bs", "1m"]);
    let msg = warning(&v, "sparse_target").unwrap_or_else(|| panic!("no sparse_target: {:?}", codes(&v)));
    assert!(msg.contains("s.dat") && msg.contains("100%"), "{msg}");
    assert!(stdout.contains("warning[sparse_target]"), "{stdout}");

    // A file with real data is not flagged.
    let full = env.path("f.dat");
    std::fs::write(&full, vec![7u8; 1 << 20]).unwrap();
    let (v, _) = env.run_ok(&["run", "--quiet", "--target", s(&full), "--rw", "read", "--bs", "64k"]);
    assert!(!codes(&v).contains(&"sparse_target".to_string()), "{:?}", codes(&v));
}

#[test]
fn size_beyond_an_existing_file_is_said_to_be_clamped() {
    let env = Env::new();
    let file = env.path("small.dat");
    std::fs::write(&file, vec![1u8; 1 << 20]).unwrap();
    let (v, _) =
        env.run_ok(&["run", "--quiet", "--target", s(&file), "--rw", "read", "--bs", "64k", "--size", "4m"]);
    let msg = warning(&v, "size_clamped").unwrap_or_else(|| panic!("no size_clamped: {:?}", codes(&v)));
    assert!(msg.contains("small.dat") && msg.contains("4MiB") && msg.contains("1MiB"), "{msg}");
    assert_eq!(v["aggregate"]["bytes"], 1 << 20, "one pass over the 1 MiB that exist");
    // Asking for no more than there is says nothing.
    let (v, _) =
        env.run_ok(&["run", "--quiet", "--target", s(&file), "--rw", "read", "--bs", "64k", "--size", "1m"]);
    assert!(!codes(&v).contains(&"size_clamped".to_string()));
}

#[test]
fn memory_backed_target_is_said() {
    let Some(shm) = tmpfs_shm() else { return };
    let env = Env::new();
    let dir = tempfile::tempdir_in(shm).unwrap();
    let (v, stdout) = env.run_ok(&[
        "run",
        "--quiet",
        "--target",
        s(dir.path()),
        "--rw",
        "read",
        "--bs",
        "64k",
        "--size",
        "1m",
    ]);
    let msg = warning(&v, "memory_backed_target").unwrap_or_else(|| panic!("{:?}", codes(&v)));
    assert!(msg.contains("tmpfs") && msg.contains("RAM"), "{msg}");
    assert!(stdout.contains("warning[memory_backed_target]"));
}

#[test]
fn mixed_jobs_report_reads_and_writes_apart() {
    let env = Env::new();
    let data = env.mkdir("data");
    let (v, stdout) = env.run_ok(&[
        "run",
        "--quiet",
        "--target",
        s(&data),
        "--rw",
        "randrw",
        "--read-pct",
        "70",
        "--bs",
        "4k",
        "--size",
        "1m",
        "--bytes",
        "2m",
    ]);
    for scope in [&v["aggregate"], &v["agents"][0]] {
        let (r, w) = (&scope["read"], &scope["write"]);
        assert!(r.is_object() && w.is_object(), "{scope}");
        assert_eq!(r["ops"], scope["read_ops"]);
        assert_eq!(w["ops"], scope["write_ops"]);
        assert_eq!(r["bytes"], scope["read_bytes"]);
        assert_eq!(w["bytes"], scope["write_bytes"]);
        for d in [r, w] {
            for k in ["iops", "bw_bytes_s", "arpt_s"] {
                assert!(d[k].is_number(), "{k}: {d}");
            }
            for k in ["min", "mean", "max", "p50", "p90", "p95", "p99", "p99_9", "p99_99"] {
                assert!(d["lat_ns"][k].is_number(), "lat_ns.{k}: {d}");
            }
            assert!(d["lat_ns"]["min"].as_u64().unwrap() > 0);
        }
        let n = |x: &Value| x.as_f64().unwrap();
        let overall = n(&scope["lat_ns"]["max"]);
        assert_eq!(
            overall,
            n(&r["lat_ns"]["max"]).max(n(&w["lat_ns"]["max"])),
            "the overall max is one of them"
        );
    }
    assert!(
        stdout.contains("  read") && stdout.contains("  write"),
        "two rows for the agent's directions:\n{stdout}"
    );

    // A single-direction job has no split.
    let (v, _) = env.run_ok(&[
        "run",
        "--quiet",
        "--target",
        s(&data),
        "--rw",
        "randread",
        "--bs",
        "4k",
        "--size",
        "1m",
    ]);
    assert!(v["aggregate"].get("read").is_none() && v["aggregate"].get("write").is_none());
}

#[test]
fn device_window_excludes_the_ramp() {
    let env = Env::new();
    // On a loop device of its own: the counters of a block device under the target, whatever
    // this machine's disks are.
    let Some(fs) = crate::util::prerequisite::require_some(
        crate::util::loop_fs::LoopFs::new(64 << 20),
        "an ext4 on a loop device (root, losetup, mkfs.ext4, mount)",
    ) else {
        return;
    };
    let data = fs.path().to_path_buf();
    // The ramp reads the 8 MiB file from the device (buffered) and then from the cache; the
    // measured 32 MiB all come from the cache: the device window must see (almost) nothing.
    let (v, _) = env.run_ok(&[
        "run",
        "--quiet",
        "--target",
        s(&data),
        "--rw",
        "read",
        "--bs",
        "1m",
        "--size",
        "8m",
        "--ramp",
        "1s",
        "--bytes",
        "32m",
    ]);
    if v["device"].is_null() {
        assert!(codes(&v).contains(&"device_counters_unavailable".to_string()));
        crate::util::require(false, "device counters (a block device under the target)");
        return;
    }
    let dev = &v["device"];
    let amp = dev["read_amplification"].as_f64().unwrap();
    assert!(amp < 0.5, "the ramp's device reads are outside the window: amplification {amp}, {dev}");
    assert!(codes(&v).contains(&"page_cache_reads".to_string()), "{:?}", codes(&v));
    let window = dev["window_s"].as_f64().unwrap();
    let wall = v["aggregate"]["wall_s"].as_f64().unwrap();
    // The window starts when the collector thread reads the counters after the ramp, which a
    // loaded machine may delay: what must hold is that the 1 s ramp lies outside it.
    assert!(window > 0.0 && window < wall + 0.5, "device window {window} s vs measurement window {wall} s");
    assert_eq!(dev["whole_device"], true);
}

#[test]
fn quick_on_tmpfs_says_it_measured_ram() {
    let Some(shm) = tmpfs_shm() else { return };
    let env = Env::new();
    let work = tempfile::tempdir_in(shm).unwrap();
    let json = env.path("quick.json");
    let out = env
        .iolens()
        .args(["quick", s(work.path()), "--time", "100ms", "--size", "4m", "-q", "--results"])
        .arg(env.path("results"))
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["memory_backed"], true);
    let warnings = v["warnings"].as_array().unwrap();
    assert_eq!(warnings[0]["code"], "memory_backed_target", "{warnings:?}");
    assert!(warnings[0]["message"].as_str().unwrap().contains("tmpfs"), "{warnings:?}");
    assert_eq!(warnings.iter().filter(|w| w["code"] == "memory_backed_target").count(), 1, "said once");
    for h in v["headlines"].as_array().unwrap() {
        assert!(h["measured"].as_str().unwrap().contains("RAM"), "{h}");
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.lines().any(|l| l.starts_with("warning: ") && l.ends_with("(memory_backed_target)")),
        "{stdout}"
    );
}
