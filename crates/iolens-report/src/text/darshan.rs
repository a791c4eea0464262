//! The terminal page of a binary Darshan log's own data, printed above the trace summary of its
//! DXT segments: the job, its mounts, each module's exact counter totals, and how the files on
//! Lustre are striped.

use std::fmt::Write;

use super::run::TERMINAL_COLUMNS;
use super::table::{shorten_path, Table};
use super::{wrap, wrap_list};
use iolens_import::darshan::{DarshanLog, DarshanModule, LustreFile};

/// A module row's reads, writes, bytes read and bytes written: DXT segments, or the sums of
/// the module's counters of each kind (None where the module has no such counter).
fn row_totals(m: &DarshanModule) -> [Option<i64>; 4] {
    if let Some(d) = &m.dxt {
        return [d.read_segments, d.write_segments, d.read_bytes, d.write_bytes].map(|v| Some(v as i64));
    }
    let sum = |suffix: &str| {
        let mut matching = m.counters.iter().filter(|c| c.name.ends_with(suffix)).map(|c| c.total).peekable();
        matching
            .peek()
            .is_some()
            .then(|| matching.fold(0i64, |a, v| if a < 0 || v < 0 { -1 } else { a.saturating_add(v) }))
    };
    [sum("_READS"), sum("_WRITES"), sum("_BYTES_READ"), sum("_BYTES_WRITTEN")]
}

fn cell(v: Option<i64>) -> String {
    match v {
        None => "-".into(),
        Some(v) if v < 0 => "n/a".into(),
        Some(v) => v.to_string(),
    }
}

/// Real jobs list dozens of mounts; the first few tell the file systems apart.
const MOUNTS_SHOWN: usize = 8;
/// Files of the Lustre striping table on the page, and OST ids in a row; all are in the JSON.
const LUSTRE_FILES_SHOWN: usize = 20;
const OSTS_SHOWN: usize = 8;

/// A stripe size or extent in the largest binary unit that divides it: `1 MiB`, `64 KiB`.
fn size(bytes: i64) -> String {
    match bytes {
        b if b < 0 => "n/a".into(),
        b if b > 0 && b % (1 << 30) == 0 => format!("{} GiB", b >> 30),
        b if b > 0 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b > 0 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} B"),
    }
}

/// Where a file has several layout components (progressive layouts), each one's stripe size ×
/// count over its extent; the pool of each that has one.
fn layout(f: &LustreFile) -> String {
    let several = f.components.len() > 1;
    let parts: Vec<String> = f
        .components
        .iter()
        .filter(|c| several || !c.pool.is_empty())
        .map(|c| {
            let mut part = String::new();
            if several {
                let end = if c.extent_end < 0 { "EOF".into() } else { size(c.extent_end) };
                let start = if c.extent_start == 0 { "0".into() } else { size(c.extent_start) };
                part = format!("{}×{} [{start}, {end})", size(c.stripe_size), c.stripe_count);
            }
            if !c.pool.is_empty() {
                part = format!("{part} pool {}", c.pool).trim_start().to_string();
            }
            part
        })
        .collect();
    parts.join("; ")
}

fn render_lustre(files: &[LustreFile], out: &mut String) {
    out.push_str("Lustre striping, per file (stripes: OST objects over all components):\n");
    let mut t = Table::new(vec!["file", "rank", "stripes", "stripe size", "OSTs", "layout"]);
    t.left_aligned = vec![4, 5];
    for f in files.iter().take(LUSTRE_FILES_SHOWN) {
        let mut osts: Vec<String> = f.ost_ids.iter().take(OSTS_SHOWN).map(i64::to_string).collect();
        if f.ost_ids.len() > OSTS_SHOWN {
            osts.push(format!("+{} more", f.ost_ids.len() - OSTS_SHOWN));
        }
        let rank = if f.rank < 0 { "shared".into() } else { f.rank.to_string() };
        t.rows.push(vec![
            f.path.clone(),
            rank,
            f.stripe_count.to_string(),
            size(f.stripe_size),
            osts.join(","),
            layout(f),
        ]);
    }
    t.render(out);
    let more = files.len().saturating_sub(LUSTRE_FILES_SHOWN);
    if more > 0 {
        let _ = writeln!(out, "and {more} more files (all in --json)");
    }
}

pub fn render(log: &DarshanLog) -> String {
    let j = &log.job;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "darshan log {} ({}): job {}, {} processes, uid {}\nexe: {}",
        log.log_version,
        log.compression,
        j.jobid,
        j.nprocs,
        j.uid,
        shorten_path(&j.exe, TERMINAL_COLUMNS - "exe: ".len())
    );
    let times = format!(
        "start {}.{:09} end {}.{:09} (Unix seconds), runtime {:.4} s — the wall time below",
        j.start_time_s, j.start_time_ns, j.end_time_s, j.end_time_ns, j.runtime_s
    );
    let _ = writeln!(out, "{}", wrap(&times, TERMINAL_COLUMNS, 2));
    if !log.mounts.is_empty() {
        let mounts: Vec<String> =
            log.mounts.iter().take(MOUNTS_SHOWN).map(|m| format!("{} ({})", m.path, m.fs_type)).collect();
        let mut mounts = mounts;
        let more = log.mounts.len().saturating_sub(MOUNTS_SHOWN);
        if more > 0 {
            // The last item carries the count of the rest: "…, /scratch (lustre) and 4 more".
            if let Some(last) = mounts.last_mut() {
                last.push_str(&format!(" and {more} more (all in --json)"));
            }
        }
        let _ = writeln!(out, "{}", wrap_list("mounts: ", &mounts, TERMINAL_COLUMNS, 2));
    }
    if log.modules.is_empty() {
        out.push_str("\nno module recorded any data\n");
        return out;
    }
    out.push_str(
        "\nmodules (counter totals are exact sums over all records; DXT rows count trace segments):\n",
    );
    let mut t = Table::new(vec![
        "module",
        "ver",
        "records",
        "reads",
        "writes",
        "bytes read",
        "bytes written",
        "note",
    ]);
    t.left_aligned = vec![7];
    for m in &log.modules {
        let note = match (m.partial, m.decoded) {
            (true, _) => "PARTIAL: ran out of memory",
            (false, false) => "not decoded by iolens",
            _ => "",
        };
        let mut row = vec![m.name.clone(), m.version.to_string()];
        if m.decoded || m.dxt.is_some() {
            row.push(m.records.to_string());
            row.extend(row_totals(m).map(cell));
        } else {
            row.extend(std::iter::repeat_n("-".to_string(), 5));
        }
        row.push(note.into());
        t.rows.push(row);
    }
    t.render(&mut out);
    out.push_str("counter totals (n/a: the runtime could not monitor it; times are summed over records):\n");
    for m in log.modules.iter().filter(|m| !m.counters.is_empty()) {
        let counters: Vec<String> = m
            .counters
            .iter()
            .map(|c| if c.total < 0 { format!("{} n/a", c.name) } else { format!("{} {}", c.name, c.total) })
            .collect();
        let times: Vec<String> =
            [("read", m.read_time_s), ("write", m.write_time_s), ("meta", m.meta_time_s)]
                .into_iter()
                .filter_map(|(what, t)| t.map(|t| format!("{what} {t:.6} s")))
                .collect();
        let mut items = counters;
        if !times.is_empty() {
            items.push(format!("time {}", times.join(", ")));
        }
        let _ = writeln!(out, "{}", wrap_list(&format!("{}: ", m.name), &items, TERMINAL_COLUMNS, 2));
    }
    if !log.lustre.is_empty() {
        render_lustre(&log.lustre, &mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use iolens_import::darshan::LustreComponent;
    use iolens_import::{import, EventSink, Format};
    use iolens_record::event::IoEvent;

    use super::*;

    fn component(stripe_size: i64, stripe_count: i64, start: i64, end: i64, pool: &str) -> LustreComponent {
        LustreComponent {
            stripe_size,
            stripe_count,
            pattern: 0,
            flags: 0,
            extent_start: start,
            extent_end: end,
            mirror_id: 0,
            pool: pool.into(),
        }
    }

    #[test]
    fn lustre_rows_show_stripe_count_size_osts_and_components() {
        let pfl = LustreFile {
            path: "/lus/a".into(),
            rank: 3,
            stripe_count: 12,
            stripe_size: 1 << 20,
            stripe_offset: Some(0),
            ost_ids: (0..12).collect(),
            components: vec![
                component(1 << 20, 2, 0, 64 << 20, ""),
                component(4 << 20, 10, 64 << 20, -1, "flash"),
            ],
            fs_osts: None,
            fs_mdts: None,
        };
        let mut plain = pfl.clone();
        plain.components.truncate(1);
        plain.rank = -1;
        let mut files = vec![pfl, plain];
        let mut out = String::new();
        render_lustre(&files, &mut out);
        let rows: Vec<&str> = out.lines().collect();
        assert!(rows[1].contains("stripes") && rows[1].contains("stripe size"), "{out}");
        let row: Vec<&str> = rows[2].split_whitespace().collect();
        assert_eq!(&row[..5], ["/lus/a", "3", "12", "1", "MiB"], "{out}");
        assert!(rows[2].contains("0,1,2,3,4,5,6,7,+4 more"), "{out}");
        assert!(rows[2].contains("1 MiB×2 [0, 64 MiB); 4 MiB×10 [64 MiB, EOF) pool flash"), "{out}");
        assert!(rows[3].contains("shared") && !rows[3].contains('['), "{out}");
        files.extend(std::iter::repeat_n(files[1].clone(), LUSTRE_FILES_SHOWN));
        let mut out = String::new();
        render_lustre(&files, &mut out);
        assert!(out.ends_with("and 2 more files (all in --json)\n"), "{out}");
    }

    /// The shared 3.5.0 log's one LUSTRE record (as darshan-util reads it), on the page and in
    /// the JSON.
    #[test]
    fn a_real_log_shows_its_lustre_striping() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/data/darshan/mpi-io-test-x86_64-3.5.0.darshan");
        if !crate::prerequisite::require_data(
            path.exists(),
            "the shared Darshan logs (../shared/data/darshan)",
        ) {
            return;
        }
        struct Discard;
        impl EventSink for Discard {
            fn path(&mut self, _: u32, _: &str) {}
            fn event(&mut self, _: &IoEvent) {}
        }
        let report = import(&path, Format::Darshan, true, &mut Discard).unwrap();
        let log = report.darshan.unwrap();
        let page = render(&log);
        let row = page
            .lines()
            .find(|l| l.starts_with("/home/wkliao/Darshan/TEST/mpi-io-test.tmp.dat"))
            .expect(&page);
        assert_eq!(
            row.split_whitespace().collect::<Vec<_>>(),
            ["/home/wkliao/Darshan/TEST/mpi-io-test.tmp.dat", "shared", "1", "1", "MiB", "1"]
        );
        let json = serde_json::to_value(&log).unwrap();
        assert_eq!(json["lustre"][0]["stripe_size"], 1 << 20);
        assert_eq!(json["lustre"][0]["ost_ids"], serde_json::json!([1]));
    }
}
