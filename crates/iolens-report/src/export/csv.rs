//! CSV results (RFC 4180, a header row, numbers unformatted), written like JSON through
//! [`iolens_output`].

use std::io::{self, Write};
use std::path::Path;

use iolens_metrics::{DirectionFigures, Figures, RunResult};

pub use iolens_output::csv::{csv_field, float};

const CSV_COLUMNS: &[&str] = &[
    // `agent` or `aggregate`: one row shape, the aggregate marked by this column.
    "row_kind",
    "name",
    "target",
    "rw",
    "bs_spec",
    "bs_bytes",
    "engine",
    "qd",
    "direct",
    "ops",
    "bytes",
    "read_ops",
    "write_ops",
    "read_bytes",
    "write_bytes",
    "fsyncs",
    "fsync_s",
    "close_s",
    "errors",
    "short_ops",
    "wall_s",
    "busy_s",
    "busy_periods",
    "bps",
    "block_unit_bytes",
    "iops",
    "bw_bytes_s",
    "arpt_s",
    "lat_min_ns",
    "lat_mean_ns",
    "lat_p50_ns",
    "lat_p90_ns",
    "lat_p95_ns",
    "lat_p99_ns",
    "lat_p99_9_ns",
    "lat_p99_99_ns",
    "lat_max_ns",
    "cpu_user_s",
    "cpu_sys_s",
    "cpu_per_op_ns",
    "io_wait_fraction",
    // Reads and writes apart (empty unless the row has both).
    "read_iops",
    "read_bw_bytes_s",
    "read_arpt_s",
    "read_lat_mean_ns",
    "read_lat_p50_ns",
    "read_lat_p99_ns",
    "read_lat_p99_9_ns",
    "read_lat_max_ns",
    "write_iops",
    "write_bw_bytes_s",
    "write_arpt_s",
    "write_lat_mean_ns",
    "write_lat_p50_ns",
    "write_lat_p99_ns",
    "write_lat_p99_9_ns",
    "write_lat_max_ns",
];

/// One direction's CSV fields, empty when the row does not have both directions.
fn direction_fields(d: Option<&DirectionFigures>) -> Vec<String> {
    match d {
        Some(d) => vec![
            float(d.iops),
            float(d.bw_bytes_s),
            float(d.arpt_s),
            d.lat_ns.mean.to_string(),
            d.lat_ns.p50.to_string(),
            d.lat_ns.p99.to_string(),
            d.lat_ns.p99_9.to_string(),
            d.lat_ns.max.to_string(),
        ],
        None => vec![String::new(); 8],
    }
}

fn figure_fields(f: &Figures) -> Vec<String> {
    let l = &f.lat_ns;
    vec![
        f.ops.to_string(),
        f.bytes.to_string(),
        f.read_ops.to_string(),
        f.write_ops.to_string(),
        f.read_bytes.to_string(),
        f.write_bytes.to_string(),
        f.fsyncs.to_string(),
        float(f.fsync_s),
        float(f.close_s),
        f.errors.to_string(),
        f.short_ops.to_string(),
        float(f.wall_s),
        float(f.busy_s),
        f.busy_periods.to_string(),
        float(f.bps),
        f.block_unit.to_string(),
        float(f.iops),
        float(f.bw_bytes_s),
        float(f.arpt_s),
        l.min.to_string(),
        l.mean.to_string(),
        l.p50.to_string(),
        l.p90.to_string(),
        l.p95.to_string(),
        l.p99.to_string(),
        l.p99_9.to_string(),
        l.p99_99.to_string(),
        l.max.to_string(),
        float(f.cpu.user_s),
        float(f.cpu.sys_s),
        float(f.cpu.per_op_ns),
        float(f.io_wait_fraction),
    ]
    .into_iter()
    .chain(direction_fields(f.read.as_ref()))
    .chain(direction_fields(f.write.as_ref()))
    .collect()
}

/// One row per agent plus an `aggregate` row, with a header.
pub fn write_csv(path: &Path, run: &RunResult) -> io::Result<()> {
    iolens_output::write_output(path, |w| csv_rows(w, run))
}

fn csv_rows(w: &mut dyn Write, run: &RunResult) -> io::Result<()> {
    writeln!(w, "{}", CSV_COLUMNS.join(","))?;
    for a in &run.agents {
        let i = &a.info;
        let mut row = vec![
            "agent".to_string(),
            csv_field(&i.name).into_owned(),
            csv_field(&i.target).into_owned(),
            csv_field(&i.rw).into_owned(),
            csv_field(&i.bs).into_owned(),
            i.bs_bytes.map_or(String::new(), |b| b.to_string()),
            i.engine.clone(),
            i.qd.to_string(),
            i.direct.to_string(),
        ];
        row.extend(figure_fields(&a.figures));
        writeln!(w, "{}", row.join(","))?;
    }
    let mut row = vec!["aggregate".to_string(), csv_field(&run.job).into_owned()];
    row.extend(std::iter::repeat_n(String::new(), 7));
    row.extend(figure_fields(&run.aggregate));
    writeln!(w, "{}", row.join(","))
}

/// Columns of the series file (`--log-interval`, `STEM-series.csv`).
pub const SERIES_COLUMNS: &[&str] = &[
    "scope",
    "name",
    "interval",
    "start_s",
    "end_s",
    "ops",
    "bytes",
    "iops",
    "bw_bytes_s",
    "lat_p50_ns",
    "lat_p99_ns",
    "lat_max_ns",
];

/// The run's series: one row per interval of each agent, then of the aggregate (`scope` says
/// which); floats always with a decimal point. Nothing is written when the run has no series.
pub fn write_series_csv(path: &Path, run: &RunResult) -> io::Result<()> {
    iolens_output::write_output(path, |w| series_rows(w, run))
}

fn series_rows(w: &mut dyn Write, run: &RunResult) -> io::Result<()> {
    writeln!(w, "{}", SERIES_COLUMNS.join(","))?;
    let Some(series) = &run.series else { return Ok(()) };
    let agents = series.agents.iter().map(|a| ("agent", a.name.as_str(), &a.intervals));
    for (scope, name, intervals) in
        agents.chain(std::iter::once(("aggregate", run.job.as_str(), &series.aggregate)))
    {
        for (k, iv) in intervals.iter().enumerate() {
            writeln!(
                w,
                "{scope},{},{k},{:?},{:?},{},{},{:?},{:?},{},{},{}",
                csv_field(name),
                iv.start_s,
                iv.end_s,
                iv.ops,
                iv.bytes,
                iv.iops,
                iv.bw_bytes_s,
                iv.lat_ns.p50,
                iv.lat_ns.p99,
                iv.lat_ns.max
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolens_metrics::{AgentInfo, AgentResult};

    #[test]
    fn csv_has_header_agent_rows_and_aggregate() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.csv");
        let mut run = RunResult { job: "j".into(), ..Default::default() };
        run.agents.push(AgentResult {
            info: AgentInfo { name: "a,1".into(), bs_bytes: Some(4096), ..Default::default() },
            figures: Figures { ops: 3, ..Default::default() },
        });
        write_csv(&path, &run).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        let cols = CSV_COLUMNS.len();
        assert_eq!(lines[0].split(',').count(), cols);
        assert!(lines[1].starts_with("agent,\"a,1\","));
        assert!(lines[2].starts_with("aggregate,j,"));
        assert_eq!(lines[2].split(',').count(), cols);
        assert!(lines[0].starts_with("row_kind,") && !lines[0].contains('.'), "{}", lines[0]);
        // Floats stay floats in every row: a zero IOPS is 0.0, so readers type the column once.
        let at = |name: &str| CSV_COLUMNS.iter().position(|c| *c == name).unwrap();
        let aggregate: Vec<&str> = lines[2].split(',').collect();
        assert_eq!(aggregate[at("iops")], "0.0");
        assert_eq!(aggregate[at("ops")], "0");
        assert_eq!(float(2.0), "2.0");
        assert_eq!(float(0.25), "0.25");
    }

    #[test]
    fn series_csv_has_a_row_per_interval_per_agent_and_aggregate() {
        use iolens_metrics::{AgentSeries, IntervalFigures, RunSeries};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.csv");
        let iv = |k: u64| IntervalFigures {
            start_s: k as f64,
            end_s: k as f64 + 1.0,
            ops: k,
            ..Default::default()
        };
        let mut run = RunResult { job: "j".into(), ..Default::default() };
        run.series = Some(RunSeries {
            interval_s: 1.0,
            aggregate: vec![iv(0), iv(1)],
            agents: vec![AgentSeries { name: "a,b".into(), intervals: vec![iv(0), iv(1)] }],
        });
        write_series_csv(&path, &run).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 1 + 4);
        assert_eq!(lines[0], SERIES_COLUMNS.join(","));
        assert_eq!(lines[2], "agent,\"a,b\",1,1.0,2.0,1,0,0.0,0.0,0,0,0");
        assert!(lines[4].starts_with("aggregate,j,1,1.0,"));
    }
}
