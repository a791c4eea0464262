//! A workload from command-line flags, built by the same code as job files.

use std::path::PathBuf;

use crate::jobfile::{build_agents, build_block_unit, ErrorSource, JobError, Raw, Setting, Settings, Totals};
use crate::model::Job;

/// The flags of `iolens run` that describe a workload: one agent, replicated `threads` times.
/// Values are kept as the user typed them; [`FlagWorkload::to_job`] reads and validates them
/// exactly as a job file's `[[agent]]` keys of the same names.
#[derive(Debug, Clone, PartialEq)]
pub struct FlagWorkload {
    pub target: PathBuf,
    pub rw: String,
    pub bs: String,
    pub threads: u32,
    pub qd: u32,
    pub engine: String,
    pub direct: bool,
    pub size: Option<String>,
    pub time: Option<String>,
    pub bytes: Option<String>,
    pub ramp: Option<String>,
    pub rate: Option<f64>,
    pub arrival: Option<String>,
    pub fsync: Option<String>,
    pub read_pct: Option<u8>,
    pub distribution: Option<String>,
    pub zipf_theta: Option<f64>,
    pub hot_spot: Option<f64>,
    pub spread: Option<f64>,
    pub stride: Option<String>,
    /// `noncontig` (the other patterns follow from `rw` and `stride`).
    pub pattern: Option<String>,
    pub regions: Option<u64>,
    pub region_size: Option<String>,
    pub spacing: Option<String>,
    pub sieve: bool,
    pub sieve_buffer: Option<String>,
    /// `--random-map true|false`: random offsets without replacement (default: true for
    /// uniform random writes).
    pub random_map: Option<bool>,
    pub block_unit: Option<String>,
    pub seed: Option<u64>,
    /// `crc32c`, `xxh3` or `pattern`.
    pub verify: Option<String>,
    pub verify_after_write: bool,
    pub verify_generation: Option<u64>,
}

impl Default for FlagWorkload {
    /// The CLI defaults: `--target . --rw randread --bs 4k --threads 1 --qd 1 --engine sync`.
    fn default() -> Self {
        FlagWorkload {
            target: PathBuf::from("."),
            rw: "randread".into(),
            bs: "4k".into(),
            threads: 1,
            qd: 1,
            engine: "sync".into(),
            direct: false,
            size: None,
            time: None,
            bytes: None,
            ramp: None,
            rate: None,
            arrival: None,
            fsync: None,
            read_pct: None,
            distribution: None,
            zipf_theta: None,
            hot_spot: None,
            spread: None,
            stride: None,
            pattern: None,
            regions: None,
            region_size: None,
            spacing: None,
            sieve: false,
            sieve_buffer: None,
            random_map: None,
            block_unit: None,
            seed: None,
            verify: None,
            verify_after_write: false,
            verify_generation: None,
        }
    }
}

fn setting(key: &str, value: Raw) -> (String, Setting) {
    let flag = format!("--{}", key.replace('_', "-"));
    (key.to_string(), Setting { value, source: ErrorSource::Flag(flag), path: key.to_string() })
}

impl FlagWorkload {
    /// The flags as agent settings, keyed like job-file keys.
    fn settings(&self) -> Settings {
        let noncontig = self.pattern.as_deref() == Some("noncontig");
        let mut v: Vec<(&str, Raw)> = vec![
            ("target", Raw::Str(self.target.to_string_lossy().into_owned())),
            ("rw", Raw::Str(self.rw.clone())),
            ("threads", Raw::Int(self.threads.into())),
            ("qd", Raw::Int(self.qd.into())),
            ("engine", Raw::Str(self.engine.clone())),
            ("direct", Raw::Bool(self.direct)),
        ];
        // A noncontig access sizes its calls from its regions; --bs always has a value.
        if !noncontig {
            v.push(("bs", Raw::Str(self.bs.clone())));
        }
        if self.sieve {
            v.push(("sieve", Raw::Bool(true)));
        }
        if self.verify_after_write {
            v.push(("verify_after_write", Raw::Bool(true)));
        }
        v.extend(self.random_map.map(|m| ("random_map", Raw::Bool(m))));
        let strings = [
            ("size", &self.size),
            ("time", &self.time),
            ("bytes", &self.bytes),
            ("ramp", &self.ramp),
            ("arrival", &self.arrival),
            ("fsync", &self.fsync),
            ("distribution", &self.distribution),
            ("stride", &self.stride),
            ("pattern", &self.pattern),
            ("region_size", &self.region_size),
            ("spacing", &self.spacing),
            ("sieve_buffer", &self.sieve_buffer),
            ("verify", &self.verify),
        ];
        v.extend(strings.into_iter().filter_map(|(k, s)| s.clone().map(|s| (k, Raw::Str(s)))));
        let floats = [
            ("rate", self.rate),
            ("zipf_theta", self.zipf_theta),
            ("hot_spot", self.hot_spot),
            ("spread", self.spread),
        ];
        v.extend(floats.into_iter().filter_map(|(k, f)| f.map(|f| (k, Raw::Float(f)))));
        v.extend(self.read_pct.map(|p| ("read_pct", Raw::Int(p.into()))));
        v.extend(self.seed.map(|s| ("seed", Raw::Int(s.into()))));
        v.extend(self.verify_generation.map(|g| ("verify_generation", Raw::Int(g.into()))));
        v.extend(self.regions.map(|n| ("regions", Raw::Int(n.into()))));
        v.into_iter().map(|(k, value)| setting(k, value)).collect()
    }

    /// The job these flags describe, named "run": one agent per thread, named `agent0`,
    /// `agent1`, ... Errors name the flag (`--bs`) in their [`ErrorSource`].
    pub fn to_job(&self) -> Result<Job, JobError> {
        let block_unit = self.block_unit.clone().map(|b| setting("block_unit", Raw::Str(b)).1);
        let block_unit = build_block_unit(block_unit.as_ref())?;
        let mut agents = build_agents(&self.settings(), 0, "", None, &mut Totals::default(), || {
            unreachable!("flags always set target")
        })?;
        let many = agents.len() > 1;
        for (i, a) in agents.iter_mut().enumerate() {
            if many {
                a.name = format!("agent{i}");
            }
            // Kept as given: the settings hold a lossy UTF-8 copy.
            a.target = self.target.clone();
        }
        Ok(Job { name: "run".into(), block_unit, agents })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::*;
    use std::time::Duration;

    #[test]
    fn defaults_make_one_random_read_agent() {
        let job = FlagWorkload::default().to_job().unwrap();
        assert_eq!((job.name.as_str(), job.block_unit), ("run", 512));
        let [a] = &job.agents[..] else { panic!("one agent") };
        assert_eq!(a.name, "agent0");
        assert_eq!(a.target, PathBuf::from("."));
        assert_eq!((a.op, a.pattern), (OpMix::Read, Pattern::Random(Distribution::Uniform)));
        assert_eq!(a.sizes, SizeSpec::Fixed(4096));
        assert_eq!((a.engine, a.queue_depth, a.direct), (EngineKind::Sync, 1, false));
        assert_eq!(a.rate, Rate::UNLIMITED);
        assert_eq!(a.fsync, FsyncPolicy::None);
        assert_eq!((a.region_size, a.termination, a.ramp), (None, Termination::default(), Duration::ZERO));
    }

    #[test]
    fn every_flag_reaches_the_agent() {
        let flags = FlagWorkload {
            target: "/dev/nvme0n1".into(),
            rw: "randrw".into(),
            bs: "4k:3,64k:1".into(),
            threads: 3,
            qd: 32,
            engine: "io_uring".into(),
            direct: true,
            size: Some("10g".into()),
            time: Some("1m".into()),
            bytes: Some("5g".into()),
            ramp: Some("500ms".into()),
            rate: Some(2000.0),
            arrival: Some("poisson".into()),
            fsync: Some("end".into()),
            read_pct: Some(70),
            distribution: Some("normal".into()),
            zipf_theta: None,
            hot_spot: Some(0.25),
            spread: Some(0.05),
            stride: None,
            block_unit: Some("4k".into()),
            seed: Some(u64::MAX),
            ..FlagWorkload::default()
        };
        let job = flags.to_job().unwrap();
        assert_eq!(job.block_unit, 4096);
        assert_eq!(
            job.agents.iter().map(|a| a.name.as_str()).collect::<Vec<_>>(),
            ["agent0", "agent1", "agent2"]
        );
        let a = &job.agents[0];
        assert_eq!(a.op, OpMix::Mixed { read_pct: 70 });
        assert_eq!(a.pattern, Pattern::Random(Distribution::Normal { center: 0.25, spread: 0.05 }));
        assert_eq!(a.sizes, SizeSpec::Weighted(vec![(4096, 3), (65536, 1)]));
        assert_eq!((a.engine, a.queue_depth, a.direct), (EngineKind::IoUring, 32, true));
        assert_eq!(a.rate, Rate { ops_per_s: 2000.0, arrival: Arrival::Poisson });
        assert_eq!(a.fsync, FsyncPolicy::AtEnd);
        assert_eq!(a.region_size, Some(10 << 30));
        assert_eq!(a.termination, Termination { time: Some(Duration::from_secs(60)), bytes: Some(5 << 30) });
        assert_eq!(a.ramp, Duration::from_millis(500));
        assert_eq!(a.seed, u64::MAX, "seeds above i64::MAX survive");
        assert_ne!(job.agents[1].seed, a.seed);
    }

    #[test]
    fn a_stride_makes_sequential_flags_strided() {
        let flags = FlagWorkload { rw: "write".into(), stride: Some("1m".into()), ..FlagWorkload::default() };
        assert_eq!(flags.to_job().unwrap().agents[0].pattern, Pattern::Strided { stride: 1 << 20 });
        let e = FlagWorkload { stride: Some("1m".into()), ..FlagWorkload::default() }.to_job().unwrap_err();
        assert_eq!(e.source, ErrorSource::Flag("--stride".into()));
        assert!(e.hint.unwrap().contains("--rw read"));
    }

    #[test]
    fn hints_speak_in_flags() {
        let e = FlagWorkload { qd: 8, ..FlagWorkload::default() }.to_job().unwrap_err();
        assert_eq!(e.source, ErrorSource::Flag("--qd".into()));
        assert!(e.hint.as_deref().unwrap().contains("--engine io_uring"), "{e}");
        let e = FlagWorkload { read_pct: Some(70), ..FlagWorkload::default() }.to_job().unwrap_err();
        assert!(e.to_string().starts_with("--read-pct: --read-pct has no effect"), "{e}");
        assert!(e.hint.as_deref().unwrap().contains("--rw randrw"), "{e}");
        let e = FlagWorkload { target: "".into(), ..FlagWorkload::default() }.to_job().unwrap_err();
        assert_eq!(e.source, ErrorSource::Flag("--target".into()));
        let e = FlagWorkload { rate: Some(f64::NAN), ..FlagWorkload::default() }.to_job().unwrap_err();
        assert_eq!(e.source, ErrorSource::Flag("--rate".into()));
        let e = FlagWorkload { threads: 0, ..FlagWorkload::default() }.to_job().unwrap_err();
        assert_eq!(e.source, ErrorSource::Flag("--threads".into()));
    }
}
