//! `iolens analyze` and `trace` in the terminal: the page of a trace summary — its figures,
//! request sizes, layers, files, processes, slowest calls and notes.

use std::fmt::Write;

use iolens_analyze::TraceSummary;

use super::number::{fmt_mib, fmt_ns, fmt_rate};
use super::run::TERMINAL_COLUMNS;
use super::table::Table;

/// The summary as text for the terminal.
pub fn render_summary(s: &TraceSummary) -> String {
    let mut out = String::new();
    if s.interrupted {
        out.push_str("INTERRUPTED: the figures cover the trace up to the stop, not all of it\n");
    }
    write_headline(&mut out, s);
    if !s.size_histogram.is_empty() {
        out.push_str("\nrequest sizes:\n");
        let mut t = Table::new(vec!["size", "reads", "writes"]);
        for b in &s.size_histogram {
            t.rows.push(vec![b.label.clone(), b.read_ops.to_string(), b.write_ops.to_string()]);
        }
        t.render(&mut out);
    }
    if s.layers.len() > 1 {
        out.push_str("\nlayers:\n");
        let mut t = Table::new(vec!["layer", "ops", "MiB", "busy_s", "BPS"]);
        for l in &s.layers {
            t.rows.push(vec![
                l.layer.clone(),
                l.ops.to_string(),
                fmt_mib(l.bytes as f64),
                format!("{:.4}", l.busy_s),
                fmt_rate(l.bps),
            ]);
        }
        t.render(&mut out);
    }
    if !s.files.is_empty() {
        out.push_str("\nfiles (by busy time):\n");
        let mut t = Table::new(vec!["busy_s", "layer", "ops", "MiB read", "MiB written", "mean lat", "path"]);
        t.left_aligned = vec![1, 6];
        for r in &s.files {
            t.rows.push(vec![
                format!("{:.4}", r.busy_s),
                r.layer.clone(),
                r.ops.to_string(),
                fmt_mib(r.read_bytes as f64),
                fmt_mib(r.write_bytes as f64),
                fmt_ns(r.mean_latency_s * 1e9),
                r.path.clone(),
            ]);
        }
        t.fit_last_column(TERMINAL_COLUMNS);
        t.render(&mut out);
    }
    if !s.processes.is_empty() {
        out.push_str("\nprocesses (by busy time):\n");
        let mut t = Table::new(vec!["pid", "layer", "threads", "ops", "MiB", "busy_s"]);
        t.left_aligned = vec![1];
        for p in &s.processes {
            t.rows.push(vec![
                p.pid.to_string(),
                p.layer.clone(),
                p.threads.to_string(),
                p.ops.to_string(),
                fmt_mib(p.bytes as f64),
                format!("{:.4}", p.busy_s),
            ]);
        }
        t.render(&mut out);
    }
    if !s.executables.is_empty() {
        out.push_str("\nexecutables (by bytes):\n");
        let mut t = Table::new(vec!["processes", "ops", "MiB", "counted", "exe"]);
        t.left_aligned = vec![4];
        for e in &s.executables {
            t.rows.push(vec![
                e.processes.to_string(),
                e.ops.to_string(),
                fmt_mib(e.bytes as f64),
                if e.counted { "yes" } else { "no" }.into(),
                e.exe.clone(),
            ]);
        }
        t.fit_last_column(TERMINAL_COLUMNS);
        t.render(&mut out);
    }
    write_process_trees(&mut out, s);
    if !s.slowest.is_empty() {
        out.push_str("\nslowest operations:\n");
        let mut t = Table::new(vec!["duration", "at_s", "pid", "tid", "op", "bytes", "offset", "path"]);
        t.left_aligned = vec![4, 7];
        for o in &s.slowest {
            t.rows.push(vec![
                fmt_ns(o.duration_s * 1e9),
                format!("{:.6}", o.start_s),
                o.pid.to_string(),
                o.tid.to_string(),
                o.op.clone(),
                o.bytes.to_string(),
                o.offset.map_or("-".into(), |v| v.to_string()),
                o.path.clone(),
            ]);
        }
        t.fit_last_column(TERMINAL_COLUMNS);
        t.render(&mut out);
    }
    if let Some(r) = &s.filters {
        let mut given = Vec::new();
        given.extend(r.include.iter().map(|p| format!("--include {p:?}")));
        given.extend(r.exclude.iter().map(|p| format!("--exclude {p:?}")));
        let line = format!(
            "path filters {}: left out {} file(s), {} data ops, {} MiB ({} bytes), {} syncs",
            given.join(" "),
            r.files_out,
            r.ops_out,
            fmt_mib(r.bytes_out as f64),
            r.bytes_out,
            r.syncs_out
        );
        let _ = writeln!(out, "{}", super::wrap(&line, TERMINAL_COLUMNS, 2));
    }
    for n in &s.notes {
        let _ = writeln!(out, "{}", super::wrap(&format!("note: {n}"), TERMINAL_COLUMNS, "note: ".len()));
    }
    out
}

/// The aggregate's figures: time, data operations and rates, latencies, syncs, sequentiality
/// and concurrency.
fn write_headline(out: &mut String, s: &TraceSummary) {
    let f = &s.figures;
    let _ = writeln!(
        out,
        "wall {:.3} s, I/O busy {:.3} s (union over all processes and threads), I/O wait {:.0}% of the run",
        f.wall_s,
        f.busy_s,
        100.0 * f.io_wait_fraction
    );
    let _ = writeln!(
        out,
        "{} data ops ({} calls): {} MiB requested\n  ({} MiB read / {} MiB written), {} IOPS, {} MiB/s,\n  BPS {}, ARPT {}",
        f.ops,
        s.aggregate_layer,
        fmt_mib(f.bytes as f64),
        fmt_mib(f.read_bytes as f64),
        fmt_mib(f.write_bytes as f64),
        fmt_rate(f.iops),
        fmt_mib(f.bw_bytes_s),
        fmt_rate(f.bps),
        fmt_ns(f.arpt_s * 1e9)
    );
    let _ = writeln!(
        out,
        "latency p50 {}  p90 {}  p99 {}  p99.9 {}  max {};\n  {} syncs taking {:.3} s;  sequential {};  in flight: mean {:.2}, peak {}",
        fmt_ns(f.lat_ns.p50 as f64),
        fmt_ns(f.lat_ns.p90 as f64),
        fmt_ns(f.lat_ns.p99 as f64),
        fmt_ns(f.lat_ns.p99_9 as f64),
        fmt_ns(f.lat_ns.max as f64),
        f.fsyncs,
        f.fsync_s,
        s.sequential_fraction.map_or("-".into(), |q| format!("{:.0}%", 100.0 * q)),
        s.concurrency.mean_in_flight,
        s.concurrency.peak_in_flight.map_or("-".into(), |p| p.to_string())
    );
}

/// The process trees, unless the trace is one process that started nothing.
fn write_process_trees(out: &mut String, s: &TraceSummary) {
    let one_lone_process = s.process_trees.len() == 1 && s.process_trees[0].processes == 1;
    if !s.process_trees.is_empty() && !one_lone_process {
        out.push_str("\nprocess trees (a root process and all it started, by bytes):\n");
        let mut t =
            Table::new(vec!["root pid", "processes", "ops", "MiB", "wall_s", "counted", "executables"]);
        t.left_aligned = vec![5, 6];
        for r in &s.process_trees {
            let counted = if r.counted_pids.len() as u64 == r.processes {
                "all".to_string()
            } else if r.counted_pids.is_empty() {
                "none".to_string()
            } else {
                let mut pids: Vec<String> = r.counted_pids.iter().take(8).map(u32::to_string).collect();
                if r.counted_pids.len() > 8 {
                    pids.push("…".into());
                }
                format!("{} of {} (pids {})", r.counted_pids.len(), r.processes, pids.join(" "))
            };
            t.rows.push(vec![
                r.root_pid.to_string(),
                r.processes.to_string(),
                r.ops.to_string(),
                fmt_mib(r.bytes as f64),
                format!("{:.3}", r.wall_s),
                counted,
                r.executables.join(", "),
            ]);
        }
        t.render(out);
    }
}

#[cfg(test)]
mod tests {
    use iolens_analyze::{AnalyzeOptions, PathFilter};
    use iolens_record::event::IoEvent;

    use super::*;
    use crate::test_events::{analyze, sample};

    /// The headline fits a 100-column terminal, even with the figures of a large job.
    #[test]
    fn the_headline_fits_100_columns() {
        let mut summary = analyze(&sample(), AnalyzeOptions::default());
        // A day of a large job: 10^11 calls moving 1 PiB each way, figures in the millions.
        summary.figures.ops = 100_000_000_000;
        summary.figures.bytes = 2 << 50;
        summary.figures.read_bytes = 1 << 50;
        summary.figures.write_bytes = 1 << 50;
        summary.figures.iops = 1.2e9;
        summary.figures.bw_bytes_s = 1.0e12;
        summary.figures.fsyncs = 123_456_789;
        summary.figures.fsync_s = 86_400.0;
        let text = render_summary(&summary);
        let headline: Vec<&str> = text.lines().take_while(|l| !l.is_empty()).collect();
        assert!(headline.len() >= 5, "{text}");
        assert!(headline.iter().all(|l| l.chars().count() <= 100), "{text}");
    }

    /// Notes are sentences, wrapped to the terminal's 100 columns, each starting with `note:`;
    /// long paths are shortened in the middle (the JSON keeps them whole).
    #[test]
    fn notes_and_paths_fit_100_columns() {
        let mut summary = analyze(&sample(), AnalyzeOptions::default());
        let long = "reads and writes on descriptors that are not files are left out, as Darshan does: \
                    8580 calls (165125 bytes) on character devices (terminals, /dev/zero, /dev/null)";
        summary.notes.push(long.into());
        let path = format!("/scratch/{}/checkpoint.h5", "deep/".repeat(30));
        summary.files[0].path = path.clone();
        let text = render_summary(&summary);
        assert!(text.contains("checkpoint.h5") && !text.contains(&path), "a long path is shortened: {text}");
        assert!(text.lines().all(|l| l.chars().count() <= 100), "{text}");
        let note: Vec<&str> = text.lines().skip_while(|l| !l.starts_with("note: reads")).take(2).collect();
        assert_eq!(note.len(), 2, "{text}");
        assert!(note[1].starts_with("      ") && note[1].trim_end().ends_with("/dev/null)"), "{text}");
    }

    #[test]
    fn path_filters_get_a_line_only_when_given() {
        let filter = PathFilter::new(&[], &["^/b$".into()]).unwrap();
        let only_a: Vec<IoEvent> = sample().into_iter().filter(|e| e.file == 0).collect();
        let reference = analyze(&only_a, AnalyzeOptions::default());
        assert!(render_summary(&reference).lines().all(|l| !l.starts_with("path filters")));
        let excluded = analyze(&sample(), AnalyzeOptions { filter, ..AnalyzeOptions::default() });
        assert!(render_summary(&excluded).contains("path filters --exclude \"^/b$\": left out 1 file(s)"));

        let filter = PathFilter::new(&["^/b".into()], &[]).unwrap();
        let s = analyze(&sample(), AnalyzeOptions { filter, ..AnalyzeOptions::default() });
        assert!(render_summary(&s).contains("path filters --include \"^/b\": left out 1 file(s), 3 data ops"));
    }
}
