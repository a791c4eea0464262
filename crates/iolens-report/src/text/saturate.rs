//! `iolens saturate` in the terminal: per load, a row per concurrency with its gain, then the
//! concurrency that saturates and the nodes it takes.

use iolens_suites::saturate::SaturateResult;
use iolens_workload::format_bytes;

use super::number::{fmt_mib, fmt_ns, fmt_rate};
use super::table::Table;

/// The result as text for the terminal.
pub fn render(r: &SaturateResult) -> String {
    let mut out = String::new();
    for c in &r.curves {
        out.push_str(&format!(
            "saturate {} {} {} ({}, concurrency = {}):\n",
            r.target,
            c.rw,
            format_bytes(r.bs),
            if r.direct { "O_DIRECT" } else { "buffered" },
            r.concurrency_by
        ));
        let mut t = Table::new(vec!["concurrency", "IO/s", "MiB/s", "gain", "p50", "p99"]);
        for p in &c.points {
            t.rows.push(vec![
                match p.per_rank_concurrency {
                    Some(each) => format!("{} ({each}/rank)", p.concurrency),
                    None => p.concurrency.to_string(),
                },
                fmt_rate(p.iops),
                fmt_mib(p.bw_bytes_s),
                p.gain.map_or("-".into(), |g| format!("{:+.0}%", 100.0 * g)),
                fmt_ns(p.lat_ns.p50 as f64),
                fmt_ns(p.lat_ns.p99 as f64),
            ]);
        }
        t.render(&mut out);
        match c.saturation_concurrency {
            Some(n) => out.push_str(&format!(
                "saturation: {n} concurrent {} requests reach 90% of the peak ({} IO/s); ended: {}\n",
                c.rw,
                fmt_rate(c.peak_iops),
                c.ended
            )),
            None => out.push_str(&format!("no throughput measured; ended: {}\n", c.ended)),
        }
        if let (Some(nodes), Some(k), Some(n)) =
            (c.nodes_to_saturate, r.cores_per_node, c.saturation_concurrency)
        {
            out.push_str(&format!(
                "nodes to saturate: {nodes} node(s) of {k} cores, one {} request in flight per core, reach {n} in flight\n",
                c.rw
            ));
        }
    }
    if let Some(p) = &r.processes {
        out.push_str(&p.line("concurrency = ranks × requests in flight per rank, each rank on its own file"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolens_suites::saturate::SaturateCurve;

    #[test]
    fn nodes_to_saturate_name_the_cores_per_node() {
        let r = SaturateResult {
            suite: "saturate",
            target: "/d".into(),
            bs: 4096,
            direct: true,
            concurrency_by: "ranks x threads",
            cores_per_node: Some(6),
            processes: None,
            curves: vec![SaturateCurve {
                rw: "randread".into(),
                points: Vec::new(),
                peak_iops: 1000.0,
                saturation_concurrency: Some(16),
                nodes_to_saturate: Some(3),
                ended: "flat".into(),
            }],
            interrupted: false,
        };
        assert!(render(&r).contains("nodes to saturate: 3 node(s) of 6 cores"), "{}", render(&r));
    }
}
