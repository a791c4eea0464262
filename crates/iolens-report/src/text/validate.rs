//! `iolens validate` in the terminal: per set, a row per configuration, each metric's normalized
//! correlation with execution time, and which metrics mislead there.

use iolens_suites::validate::{ValidateResult, ValidationRun};

use super::table::Table;

/// The result as text for the terminal.
pub fn render(r: &ValidateResult) -> String {
    let mut out = String::new();
    for s in &r.sets {
        out.push_str(&format!("\nset {}: {} ({} runs)\n", s.set, s.name, s.runs.len()));
        let mut t = Table::new(vec!["config", "runs", "time s", "IOPS", "MiB/s", "ARPT", "BPS", "moved/app"]);
        t.left_aligned = vec![0];
        // One row per configuration, in the order the shuffled runs first met them.
        let mut seen: Vec<&str> = Vec::new();
        for l in s.runs.iter().map(|x| x.config.as_str()) {
            if seen.contains(&l) {
                continue;
            }
            seen.push(l);
            let of: Vec<&ValidationRun> = s.runs.iter().filter(|x| x.config == l).collect();
            let mean = |g: fn(&ValidationRun) -> f64| of.iter().map(|x| g(x)).sum::<f64>() / of.len() as f64;
            t.rows.push(vec![
                l.to_string(),
                of.len().to_string(),
                format!("{:.4}", mean(|x| x.time_s)),
                format!("{:.0}", mean(|x| x.iops)),
                format!("{:.1}", mean(|x| x.bw_bytes_s) / (1u64 << 20) as f64),
                format!("{:.2e}", mean(|x| x.arpt_s)),
                format!("{:.0}", mean(|x| x.bps)),
                format!("{:.1}", mean(|x| x.moved_bytes as f64 / x.bytes.max(1) as f64)),
            ]);
        }
        t.render(&mut out);
        let cells: Vec<String> = s
            .correlations
            .iter()
            .map(|c| match c.normalized_cc {
                Some(n) => format!("{} {:+.3}", c.name, n),
                None => format!("{} -", c.name),
            })
            .collect();
        out.push_str(&format!("normalized CC with execution time: {}\n", cells.join(", ")));
        if s.misleading.is_empty() {
            out.push_str("verdict: every metric points the right way here\n");
        } else {
            out.push_str(&format!("verdict: misleading here: {}\n", s.misleading.join(", ")));
        }
        for n in &s.notes {
            out.push_str(&format!("note: {n}\n"));
        }
    }
    out.push_str(
        "\nnormalized CC = |Pearson CC of metric vs execution time|, negative when its sign is not the expected one \
         (IOPS, MiB/s, BPS should fall as time grows; ARPT should grow)\n",
    );
    out
}
