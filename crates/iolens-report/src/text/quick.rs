//! `iolens quick` in the terminal: the headline figures of every part, what each part measured,
//! where its full result is, and the warnings.

use iolens_suites::quick::QuickReport;
use iolens_workload::format_bytes;

use super::run::TERMINAL_COLUMNS;
use super::table::{Table, COLUMN_GAP};

/// The widths the figure and value columns are wrapped at, and the narrowest the "what was
/// measured" column gets (it takes what is left of the terminal).
const FIGURE_WIDTH: usize = 22;
const VALUE_WIDTH: usize = 26;
const MEASURED_MIN: usize = 30;

/// The summary page in the terminal.
pub fn render(r: &QuickReport) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\n{} on {} ({}), memory {}, O_DIRECT {}",
        r.directory,
        r.device.as_deref().unwrap_or("no block device"),
        r.filesystem,
        format_bytes(r.memory),
        if r.direct_supported { "supported" } else { "unsupported" }
    );
    let mut table = Table::new(vec!["part", "figure", "value", "what was measured"]);
    table.left_aligned = vec![0, 1, 2, 3];
    // Each text column is wrapped within its share of the terminal, so that the page fits.
    let part_width = r.headlines.iter().map(|h| h.part.len()).chain(["part".len()]).max().unwrap_or(0);
    let measured_width = TERMINAL_COLUMNS
        .saturating_sub(part_width + FIGURE_WIDTH + VALUE_WIDTH + 3 * COLUMN_GAP)
        .max(MEASURED_MIN);
    for h in &r.headlines {
        let cells = [
            super::wrap(&h.figure, FIGURE_WIDTH, 0),
            super::wrap(&h.value, VALUE_WIDTH, 0),
            super::wrap(&h.measured, measured_width, 0),
        ];
        let lines: Vec<Vec<&str>> = cells.iter().map(|c| c.lines().collect()).collect();
        let height = lines.iter().map(Vec::len).max().unwrap_or(1);
        for i in 0..height {
            let part = if i == 0 { h.part } else { "" };
            let mut row = vec![part.to_string()];
            row.extend(lines.iter().map(|l| l.get(i).copied().unwrap_or_default().to_string()));
            table.rows.push(row);
        }
    }
    table.render(&mut s);
    if let Some(p) = &r.processes {
        let _ = writeln!(
            s,
            "ranks: {} on {} host(s) ({}); figures are the aggregate over all ranks",
            p.ranks,
            p.hosts.len(),
            p.hosts.join(", ")
        );
    }
    for p in &r.parts {
        if let Some(why) = &p.skipped {
            let _ = writeln!(s, "{}: skipped: {why}", p.part);
        }
        match (&p.json, &p.error) {
            (_, Some(e)) => {
                let _ = writeln!(s, "{}: failed after {:.1} s: {e}", p.part, p.seconds);
            }
            (Some(file), None) => {
                let _ =
                    writeln!(s, "{}: {:.1} s, full result in {}/{file}", p.part, p.seconds, r.results_dir);
            }
            (None, None) => {}
        }
    }
    for w in &r.warnings {
        let _ = writeln!(s, "warning: {} ({})", w.message, w.code);
    }
    if r.interrupted {
        let _ = writeln!(s, "interrupted: the page covers the parts that ran");
    }
    let _ = writeln!(s, "total {:.0} s", r.elapsed_s);
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolens_output::contract::Notice;

    #[test]
    fn a_warning_is_its_sentence_then_its_code() {
        let r = QuickReport {
            directory: "/d".into(),
            filesystem: "ext4".into(),
            memory_backed: false,
            device: None,
            direct_supported: true,
            memory: 1 << 30,
            processes: None,
            time_per_point_s: 1.0,
            results_dir: "/r".into(),
            parts: Vec::new(),
            headlines: Vec::new(),
            warnings: vec![
                Notice::new("few_ops", "sweep 1MiB: fewer than 1000 operations measured (12)"),
                Notice::new("short_run", "sweep 1MiB: ran 0.1 s"),
            ],
            interrupted: false,
            elapsed_s: 1.0,
        };
        let text = render(&r);
        let few = "warning: sweep 1MiB: fewer than 1000 operations measured";
        let line = text.lines().find(|l| l.starts_with(few)).unwrap_or_else(|| panic!("{text}"));
        assert!(line.ends_with(" (few_ops)"), "{line}");
        assert!(!line.contains("few_ops: "), "{line}");
        assert!(text.contains("warning: sweep 1MiB: ran 0.1 s (short_run)"), "{text}");
    }
}
