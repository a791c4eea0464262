//! The resolved job as the envelope's `job`: every setting the run used, defaults filled in,
//! under the keys and units of the output contract (`*_bytes`, `*_s`).

use crate::{AgentSpec, Arrival, Distribution, FsyncPolicy, Job, OpMix, Pattern, SizeSpec, Verify};
use serde_json::{json, Value};

/// The resolved job as JSON (the envelope's `job` of a run).
pub fn resolved_job(job: &Job) -> Value {
    json!({
        "name": job.name,
        "block_unit_bytes": job.block_unit,
        "agents": job.agents.iter().map(agent).collect::<Vec<_>>(),
    })
}

fn agent(a: &AgentSpec) -> Value {
    let (rw, read_pct) = match a.op {
        OpMix::Read => ("read", 100),
        OpMix::Write => ("write", 0),
        OpMix::Mixed { read_pct } => ("mixed", read_pct),
    };
    json!({
        "name": a.name,
        "target": a.target.display().to_string(),
        "phase": a.phase,
        "rw": rw,
        "read_pct": read_pct,
        "pattern": pattern(&a.pattern),
        "random_map": a.random_map,
        "bs": sizes(&a.sizes),
        "engine": a.engine.name(),
        "queue_depth": a.queue_depth,
        "direct": a.direct,
        "rate": {
            "ops_per_s": a.rate.ops_per_s,
            "arrival": match a.rate.arrival { Arrival::Constant => "constant", Arrival::Poisson => "poisson" },
        },
        "fsync": fsync(a.fsync),
        "region_size_bytes": a.region_size,
        "time_s": a.termination.time.map(|t| t.as_secs_f64()),
        "size_bytes": a.termination.bytes,
        "ramp_s": a.ramp.as_secs_f64(),
        "start_delay_s": a.start_delay.as_secs_f64(),
        "seed": a.seed,
        "verify": a.verify.as_ref().map(verify),
    })
}

/// Block sizes with their weights (a fixed size is one entry of weight 100).
fn sizes(s: &SizeSpec) -> Value {
    let list: Vec<(u64, u32)> = match s {
        SizeSpec::Fixed(b) => vec![(*b, 100)],
        SizeSpec::Weighted(list) => list.clone(),
    };
    list.iter().map(|(bytes, weight)| json!({"bs_bytes": bytes, "weight": weight})).collect()
}

fn pattern(p: &Pattern) -> Value {
    match p {
        Pattern::Sequential => json!({"kind": "sequential"}),
        Pattern::Strided { stride } => json!({"kind": "strided", "stride_bytes": stride}),
        Pattern::Random(d) => {
            let distribution = match d {
                Distribution::Uniform => json!({"kind": "uniform"}),
                Distribution::Normal { center, spread } => {
                    json!({"kind": "normal", "center": center, "spread": spread})
                }
                Distribution::Zipf { theta } => json!({"kind": "zipf", "theta": theta}),
            };
            json!({"kind": "random", "distribution": distribution})
        }
        Pattern::Noncontiguous(n) => json!({
            "kind": "noncontiguous",
            "regions": n.regions,
            "region_size_bytes": n.region_size,
            "spacing_bytes": n.spacing,
            "sieve_buffer_bytes": n.sieve_buffer,
        }),
    }
}

fn fsync(f: FsyncPolicy) -> Value {
    match f {
        FsyncPolicy::None => json!({"kind": "none"}),
        FsyncPolicy::EveryN(n) => json!({"kind": "fsync_every", "ops": n}),
        FsyncPolicy::DataEveryN(n) => json!({"kind": "fdatasync_every", "ops": n}),
        FsyncPolicy::AtEnd => json!({"kind": "at_end"}),
    }
}

fn verify(v: &Verify) -> Value {
    json!({"kind": v.kind.name(), "after_write": v.after_write, "generation": v.generation})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_agent_setting_is_in_the_resolved_job() {
        let job = crate::FlagWorkload {
            target: "/tmp/x".into(),
            rw: "randrw".into(),
            bs: "4k".into(),
            threads: 2,
            read_pct: Some(70),
            time: Some("2s".into()),
            ..Default::default()
        }
        .to_job()
        .unwrap();
        let v = resolved_job(&job);
        assert_eq!(v["agents"].as_array().unwrap().len(), 2);
        let a = &v["agents"][0];
        assert_eq!(a["rw"], "mixed");
        assert_eq!(a["read_pct"], 70);
        assert_eq!(a["bs"][0]["bs_bytes"], 4096);
        assert_eq!(a["pattern"]["distribution"]["kind"], "uniform");
        assert_eq!(a["time_s"], 2.0);
        assert!(a["engine"].is_string() && a["queue_depth"].as_u64().unwrap() >= 1);
        assert_eq!(v["block_unit_bytes"], 512);
    }
}
