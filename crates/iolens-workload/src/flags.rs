//! A single-agent workload from command-line flags, built by the same code as job files.

use std::path::PathBuf;

use crate::jobfile::{build_agents, ErrorSource, JobError, Raw, Setting, Settings};
use crate::model::Job;
use crate::units::parse_size;

/// The flags of `iolens run` that describe a workload. `threads` replicates the agent.
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
    pub block_unit: Option<String>,
    pub seed: Option<u64>,
}

impl Default for FlagWorkload {
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
            block_unit: None,
            seed: None,
        }
    }
}

fn flag_name(key: &str) -> String {
    format!("--{}", key.replace('_', "-"))
}

impl FlagWorkload {
    fn settings(&self) -> Settings {
        let mut v: Vec<(&str, Raw)> = vec![
            ("target", Raw::Str(self.target.to_string_lossy().into_owned())),
            ("rw", Raw::Str(self.rw.clone())),
            ("bs", Raw::Str(self.bs.clone())),
            ("threads", Raw::Int(self.threads as i64)),
            ("qd", Raw::Int(self.qd as i64)),
            ("engine", Raw::Str(self.engine.clone())),
            ("direct", Raw::Bool(self.direct)),
        ];
        let strings = [
            ("size", &self.size),
            ("time", &self.time),
            ("bytes", &self.bytes),
            ("ramp", &self.ramp),
            ("arrival", &self.arrival),
            ("fsync", &self.fsync),
            ("distribution", &self.distribution),
            ("stride", &self.stride),
        ];
        v.extend(strings.into_iter().filter_map(|(k, s)| s.clone().map(|s| (k, Raw::Str(s)))));
        let floats = [
            ("rate", self.rate),
            ("zipf_theta", self.zipf_theta),
            ("hot_spot", self.hot_spot),
            ("spread", self.spread),
        ];
        v.extend(floats.into_iter().filter_map(|(k, f)| f.map(|f| (k, Raw::Float(f)))));
        if let Some(p) = self.read_pct {
            v.push(("read_pct", Raw::Int(p as i64)));
        }
        if let Some(s) = self.seed {
            v.push(("seed", Raw::Int(s as i64)));
        }
        v.into_iter()
            .map(|(k, value)| {
                (
                    k.to_string(),
                    Setting { value, source: ErrorSource::Flag(flag_name(k)), path: k.to_string() },
                )
            })
            .collect()
    }

    /// The job these flags describe: one agent per thread, named `agent0`, `agent1`, …
    pub fn to_job(&self) -> Result<Job, JobError> {
        let block_unit = match &self.block_unit {
            Some(b) => match parse_size(b) {
                Ok(0) | Err(_) => {
                    return Err(JobError {
                        source: ErrorSource::Flag("--block-unit".into()),
                        key: "block_unit".into(),
                        message: format!("\"{b}\" is not a positive size"),
                        hint: Some("e.g. 512 or 4k".into()),
                    })
                }
                Ok(v) => v,
            },
            None => 512,
        };
        let mut agents = build_agents(&self.settings(), 0, None, || unreachable!("target is always set"))?;
        if agents.len() > 1 {
            for (i, a) in agents.iter_mut().enumerate() {
                a.name = format!("agent{i}");
            }
        }
        Ok(Job { name: "run".into(), block_unit, agents })
    }
}
