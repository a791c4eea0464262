//! What every rank under `mpirun` must agree on before it runs anything: the measurement its
//! job and flags define, as a [`JobFingerprint`] each rank makes from what it parsed. Not in it:
//! what may differ per rank without changing the measurement — where each rank writes its
//! outputs (`--json`, `--csv`, `--trace`, `--busy-log`, `--results`), its own directory or file
//! when each rank has its own files, seeds and `--verify-generation` (stamps of the data, as a
//! rank-dependent generation for `--reorder-ranks`), the job's name.

use std::fmt::Debug;

use iolens_workload::Job;
use serde_json::Value;

use crate::wire::JobFingerprint;

/// The settings of an agent in the resolved job, in the order a difference is named in.
const AGENT_FIELDS: &[&str] = &[
    "rw",
    "read_pct",
    "pattern",
    "random_map",
    "bs",
    "engine",
    "queue_depth",
    "direct",
    "rate",
    "fsync",
    "region_size_bytes",
    "time_s",
    "size_bytes",
    "ramp_s",
    "start_delay_s",
    "phase",
    "verify",
    "name",
];

/// The job itself: its agents with every setting of the resolved job. `shared_file`: the ranks
/// share the agents' targets, so those must be the same too.
pub fn of_job(job: &Job, shared_file: bool) -> JobFingerprint {
    let mut fp = JobFingerprint::default();
    fp.push("agents", job.agents.len());
    fp.push("block_unit", job.block_unit);
    let resolved = iolens_workload::resolved_job(job);
    let agents = resolved["agents"].as_array().cloned().unwrap_or_default();
    let one = agents.len() == 1;
    for (i, agent) in agents.iter().enumerate() {
        let label = |field: &str| if one { field.to_string() } else { format!("agent[{i}] {field}") };
        for field in AGENT_FIELDS.iter().chain(if shared_file { &["target"][..] } else { &[][..] }) {
            let mut v = agent[*field].clone();
            if let Some(verify) = v.as_object_mut() {
                // A stamp of the data, as the seed: each rank may write its own (IOR's -C).
                verify.remove("generation");
            }
            fp.push(label(field), value(field, &v));
        }
    }
    fp
}

/// A setting of the resolved job as one short word where it can be.
fn value(field: &str, v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(sizes) if field == "bs" => {
            let each = |s: &Value| match s["weight"].as_u64() {
                Some(100) | None => s["bs_bytes"].to_string(),
                Some(w) => format!("{}/{w}%", s["bs_bytes"]),
            };
            sizes.iter().map(each).collect::<Vec<_>>().join(",")
        }
        // A kind and its settings: `random distribution=uniform`, `strided stride_bytes=4096`.
        Value::Object(o) if o.contains_key("kind") => {
            let rest = o.iter().filter(|(k, _)| *k != "kind").map(|(k, v)| format!(" {k}={}", value(k, v)));
            value(field, &o["kind"]) + &rest.collect::<String>()
        }
        other => other.to_string(),
    }
}

/// Fields of a suite's arguments that may differ per rank: output paths, its own directory.
const SUITE_PER_RANK: &[&str] = &[
    "json",
    "csv",
    "parquet",
    "results",
    "quiet",
    "_quiet",
    "keep",
    "allow_overwrite",
    "target",
    "target_flag",
    "dir",
];

/// A suite: every argument it was given, from their `{:#?}` (one field a line), as `--flag`
/// value, but those of [`SUITE_PER_RANK`]; `command` is the suite itself.
pub fn of_suite(args: &impl Debug) -> JobFingerprint {
    let text = format!("{args:#?}");
    let mut fields: Vec<(String, String)> = Vec::new();
    for line in text.lines().map(str::trim) {
        let named =
            line.split_once(": ").filter(|(k, _)| k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
        match named {
            Some((key, rest)) => fields.push((key.to_string(), rest.trim_end_matches(',').to_string())),
            None if fields.is_empty() => fields.push(("command".into(), line.trim_end_matches(" {").into())),
            // The end of a nested struct, not part of its last field.
            None if line.trim_end_matches(',') == "}" => {}
            // An item of a list, or its end: `[1,4]`.
            None => {
                let last = &mut fields.last_mut().expect("not empty").1;
                if !last.ends_with('[') && !line.starts_with(']') {
                    last.push(',');
                }
                last.push_str(line.trim_end_matches(','));
            }
        }
    }
    let mut fp = JobFingerprint::default();
    for (key, value) in fields {
        if !SUITE_PER_RANK.contains(&key.as_str()) {
            let name = if key == "command" { key } else { format!("--{}", key.replace('_', "-")) };
            fp.push(name, value);
        }
    }
    fp
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolens_workload::FlagWorkload;

    fn job(rw: &str, bs: &str, target: &str) -> Job {
        FlagWorkload { target: target.into(), rw: rw.into(), bs: bs.into(), ..Default::default() }
            .to_job()
            .unwrap()
    }

    #[test]
    fn the_job_not_its_per_rank_target_defines_the_fingerprint() {
        let base = of_job(&job("write", "64k", "/a"), false);
        assert_eq!(base, of_job(&job("write", "64k", "/b"), false), "each rank may have its own directory");
        assert_ne!(of_job(&job("write", "64k", "/a"), true), of_job(&job("write", "64k", "/b"), true));
        let d = base.first_difference(&of_job(&job("write", "4k", "/a"), false), 2).unwrap();
        assert_eq!(d, "bs 4096 on rank 2, 65536 on rank 0");
        let d = base.first_difference(&of_job(&job("read", "64k", "/a"), false), 1).unwrap();
        assert_eq!(d, "rw read on rank 1, write on rank 0");
        let d = base.first_difference(&of_job(&job("randwrite", "64k", "/a"), false), 1).unwrap();
        assert_eq!(d, "pattern random distribution=uniform on rank 1, sequential on rank 0");
        let verified = |generation| {
            let mut j = job("write", "64k", "/a");
            let kind = iolens_workload::VerifyKind::Crc32c;
            j.agents[0].verify = Some(iolens_workload::Verify { kind, after_write: false, generation });
            of_job(&j, false)
        };
        assert_eq!(verified(Some(1000)), verified(Some(1001)), "each rank may stamp its own generation");
        assert_ne!(verified(None), base);
    }

    #[derive(Debug)]
    #[allow(dead_code)]
    struct Inner {
        target: String,
        time: String,
        json: Option<String>,
    }
    #[derive(Debug)]
    #[allow(dead_code)]
    struct SweepLike {
        suite: Inner,
        threads: Vec<u32>,
        max_bs: String,
    }

    #[test]
    fn a_suite_compares_its_arguments_but_output_paths_and_directory() {
        let of = |target: &str, json: &str, threads: Vec<u32>, max_bs: &str| {
            of_suite(&SweepLike {
                suite: Inner { target: target.into(), time: "1s".into(), json: Some(json.into()) },
                threads,
                max_bs: max_bs.into(),
            })
        };
        let zero = of("/d0", "/r0.json", vec![1, 2], "16k");
        assert_eq!(zero, of("/d1", "/r1.json", vec![1, 2], "16k"));
        assert_eq!(zero.fields[0], ("command".to_string(), "SweepLike".to_string()));
        let d = zero.first_difference(&of("/d0", "/r0.json", vec![1, 2], "32k"), 3).unwrap();
        assert_eq!(d, "--max-bs \"32k\" on rank 3, \"16k\" on rank 0");
        let d = zero.first_difference(&of("/d0", "/r0.json", vec![1, 4], "16k"), 1).unwrap();
        assert!(d.starts_with("--threads [1,4] on rank 1"), "{d}");
    }
}
