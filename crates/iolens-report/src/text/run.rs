//! The terminal table of a run: one row per agent and an aggregate row, the device beside the
//! application, then the verification and the warnings.

use std::fmt::Write;

use iolens_metrics::{DeviceReport, DirectionFigures, Figures, RunResult};

use super::number::{fmt_mib, fmt_ns, fmt_rate};
use super::table::{shorten_path, Table, COLUMN_GAP};

fn figure_cells(f: &Figures) -> Vec<String> {
    vec![
        f.ops.to_string(),
        fmt_rate(f.iops),
        fmt_mib(f.bw_bytes_s),
        fmt_rate(f.bps),
        format!("{:.2}", f.busy_s),
        format!("{:.0}%", 100.0 * f.io_wait_fraction),
        fmt_ns(f.arpt_s * 1e9),
        fmt_ns(f.lat_ns.p50 as f64),
        fmt_ns(f.lat_ns.p99 as f64),
        fmt_ns(f.lat_ns.p99_9 as f64),
        fmt_ns(f.cpu.per_op_ns),
    ]
}

/// The cells of one direction of a mixed row: what is measured per direction, blanks for the
/// rest (busy time and CPU belong to the agent, not to a direction).
fn direction_cells(d: &DirectionFigures) -> Vec<String> {
    vec![
        d.ops.to_string(),
        fmt_rate(d.iops),
        fmt_mib(d.bw_bytes_s),
        String::new(),
        String::new(),
        String::new(),
        fmt_ns(d.arpt_s * 1e9),
        fmt_ns(d.lat_ns.p50 as f64),
        fmt_ns(d.lat_ns.p99 as f64),
        fmt_ns(d.lat_ns.p99_9 as f64),
        String::new(),
    ]
}

/// A row's reads and writes apart, under it, when it has both.
fn direction_rows(f: &Figures, rows: &mut Vec<Vec<String>>) {
    for (label, d) in [("  read", &f.read), ("  write", &f.write)] {
        if let Some(d) = d {
            let mut row = vec![label.to_string(), String::new(), String::new(), String::new()];
            row.extend(direction_cells(d));
            rows.push(row);
        }
    }
}

const FIGURE_HEADER: [&str; 11] =
    ["ops", "IOPS", "MiB/s", "BPS", "busy_s", "io_wait", "ARPT", "p50", "p99", "p99.9", "cpu/op"];

fn device_lines(d: &DeviceReport, out: &mut String) {
    let amp = |a: Option<f64>| a.map_or("-".to_string(), |a| format!("{a:.2}x"));
    let _ = writeln!(
        out,
        "device {} ({}), whole device (other processes' I/O included),\n  over the measurement window ({:.3} s):  read {} MiB in {} ops (vs app: {}),\n  write {} MiB in {} ops (vs app: {}),  util {:.0}%,  avg queue {:.2}",
        d.device,
        d.filesystem,
        d.window_s,
        fmt_mib(d.read_bytes as f64),
        d.read_ops,
        amp(d.read_amplification),
        fmt_mib(d.write_bytes as f64),
        d.write_ops,
        amp(d.write_amplification),
        100.0 * d.util,
        d.avg_queue
    );
}

/// Columns a terminal line of iolens's tables keeps within.
pub const TERMINAL_COLUMNS: usize = 100;

/// The agent columns before the figures.
const AGENT_HEADER: [&str; 4] = ["agent", "rw", "bs", "engine"];

/// The table of agents, and the lines naming their targets (paths do not fit in a row). The
/// figures that do not fit within [`TERMINAL_COLUMNS`] go to a second table of the same rows.
fn agent_tables(run: &RunResult, out: &mut String) {
    let mut rows = Vec::new();
    for a in &run.agents {
        let i = &a.info;
        let engine = if i.qd > 1 { format!("{} qd{}", i.engine, i.qd) } else { i.engine.clone() };
        let engine = if i.direct { format!("{engine} direct") } else { engine };
        let mut row = vec![i.name.clone(), i.rw.clone(), i.bs.clone(), engine];
        row.extend(figure_cells(&a.figures));
        rows.push(row);
        direction_rows(&a.figures, &mut rows);
    }
    if run.agents.len() != 1 {
        let mut row = vec!["all".to_string(), String::new(), String::new(), String::new()];
        row.extend(figure_cells(&run.aggregate));
        rows.push(row);
        direction_rows(&run.aggregate, &mut rows);
    }
    let mut header: Vec<&str> = AGENT_HEADER.to_vec();
    header.extend(FIGURE_HEADER);
    // As many columns as fit in the first table; the rest, after the agent's name, in a second.
    let widths = Table { header: header.clone(), rows: rows.clone(), left_aligned: vec![] }.widths();
    let mut split = AGENT_HEADER.len();
    let mut line = widths[..split].iter().sum::<usize>() + COLUMN_GAP * (split - 1);
    while split < header.len() && line + COLUMN_GAP + widths[split] <= TERMINAL_COLUMNS {
        line += COLUMN_GAP + widths[split];
        split += 1;
    }
    let first: Vec<Vec<String>> = rows.iter().map(|r| r[..split].to_vec()).collect();
    Table { header: header[..split].to_vec(), rows: first, left_aligned: vec![] }.render(out);
    if split < header.len() {
        let mut rest_header = vec![header[0]];
        rest_header.extend(&header[split..]);
        let rest: Vec<Vec<String>> = rows
            .iter()
            .map(|r| std::iter::once(r[0].clone()).chain(r[split..].iter().cloned()).collect())
            .collect();
        Table { header: rest_header, rows: rest, left_aligned: vec![] }.render(out);
    }
    let name_width = run.agents.iter().map(|a| a.info.name.chars().count()).max().unwrap_or(0);
    for a in &run.agents {
        let label = format!("{:<name_width$}  target ", a.info.name);
        let room = TERMINAL_COLUMNS.saturating_sub(label.chars().count());
        let _ = writeln!(out, "{label}{}", shorten_path(&a.info.target, room));
    }
}

/// Renders a run for the terminal.
pub fn render_run(run: &RunResult) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "job {}: {:.2} s wall, {:.2} s busy (union of in-flight time), {} MiB requested by the application{}{}",
        run.job,
        run.aggregate.wall_s,
        run.aggregate.busy_s,
        fmt_mib(run.aggregate.bytes as f64),
        if run.aggregate.moved_bytes != run.aggregate.bytes {
            format!(", {} MiB moved by the calls (data sieving reads the holes)", fmt_mib(run.aggregate.moved_bytes as f64))
        } else {
            String::new()
        },
        if run.interrupted { " — INTERRUPTED" } else { "" }
    );
    agent_tables(run, &mut out);
    let _ = writeln!(
        out,
        "IOPS and MiB/s: application requests per wall second; BPS: {}-byte blocks per busy second;\n\
         latency = submission to completion{}",
        run.aggregate.block_unit,
        if run.aggregate.read.is_some() { "; read/write rows: each direction alone" } else { "" }
    );
    if let Some(d) = &run.device {
        device_lines(d, &mut out);
    }
    if let Some(v) = &run.verify {
        verify_lines(v, &mut out);
    }
    for w in &run.warnings {
        let line = format!("warning[{}]: {}", w.code.as_str(), w.message);
        let _ = writeln!(out, "{}", super::wrap(&line, TERMINAL_COLUMNS, 2));
    }
    if let Some(e) = &run.error {
        let _ = writeln!(out, "error: {e}");
    }
    out
}

fn verify_lines(v: &iolens_metrics::VerifyReport, out: &mut String) {
    let generation = v.generation_written.map_or(String::new(), |g| format!(" as generation {g}"));
    let _ = writeln!(
        out,
        "verify ({}): {} blocks written{generation}, {} checked, {} failed; {:.3} s filling and checking \
         (outside latency, busy time and BPS; inside the wall time of IOPS and MiB/s), {:.3} s reading back \
         (after the measurement)",
        v.kind, v.blocks_written, v.blocks_checked, v.failures_total, v.cost_s, v.read_back_s
    );
    for f in &v.failures {
        let found = f.found.as_ref().map_or("no block header".to_string(), |h| {
            format!("offset {} size {} generation {}", h.offset, h.size, h.generation.unwrap_or_default())
        });
        let expected = match f.expected.generation {
            Some(g) => format!("offset {} size {} generation {g}", f.expected.offset, f.expected.size),
            None => format!("offset {} size {}", f.expected.offset, f.expected.size),
        };
        let first = f.first_bad_offset.map_or(String::new(), |o| {
            format!(
                ", first bad byte at file offset {o} (byte {} of the block)",
                f.first_bad_byte.unwrap_or(0)
            )
        });
        let _ = writeln!(
            out,
            "verify failure: {} block at offset {} of {} ({}): expected {expected}, found {found}{first}",
            f.kind, f.offset, f.file, f.phase
        );
    }
    if v.failures_total > v.failures.len() as u64 {
        let _ =
            writeln!(out, "verify: {} more failures not listed", v.failures_total - v.failures.len() as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolens_metrics::{AgentInfo, AgentResult, Warning, WarningCode};

    #[test]
    fn table_lists_agents_aggregate_and_warnings() {
        let mut run = RunResult { job: "demo".into(), ..Default::default() };
        for name in ["a0", "a1"] {
            run.agents.push(AgentResult {
                info: AgentInfo {
                    name: name.into(),
                    rw: "randread".into(),
                    bs: "4KiB".into(),
                    ..Default::default()
                },
                figures: Figures { ops: 10, ..Default::default() },
            });
        }
        run.aggregate.ops = 20;
        run.warnings.push(Warning::new(WarningCode::ShortRun, "too short"));
        let text = render_run(&run);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[1].starts_with("agent"));
        assert!(lines[2].starts_with("a0"));
        assert!(lines[4].starts_with("all") && lines[4].contains("20"));
        assert!(text.contains("warning[short_run]: too short"));
    }

    #[test]
    fn mixed_rows_show_reads_and_writes_apart() {
        let mut run = RunResult { job: "mix".into(), ..Default::default() };
        let dir = |ops: u64, p99: u64| DirectionFigures {
            ops,
            lat_ns: iolens_metrics::LatencySummary { p99, ..Default::default() },
            ..Default::default()
        };
        let figures = Figures {
            ops: 30,
            read: Some(dir(20, 10_000)),
            write: Some(dir(10, 3_100_000)),
            ..Default::default()
        };
        run.agents.push(AgentResult {
            info: AgentInfo { name: "a0".into(), rw: "randrw 70% read".into(), ..Default::default() },
            figures: figures.clone(),
        });
        run.aggregate = figures;
        let text = render_run(&run);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[2].starts_with("a0"));
        assert!(lines[3].starts_with("  read") && lines[3].contains("20") && lines[3].contains("10.0µs"));
        assert!(lines[4].starts_with("  write") && lines[4].contains("3.10ms"), "{text}");
        assert!(!text.contains("\nall"), "one agent: no aggregate row");
    }
}
