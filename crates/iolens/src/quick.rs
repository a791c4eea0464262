//! `iolens quick`: a short characterization of the storage behind a directory.

use std::fs::OpenOptions;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use iolens_engine::{run_job, LocalBarrier, RunOptions};
use iolens_metrics::{RunResult, SCHEMA_VERSION};
use iolens_report::table::{fmt_mib, fmt_ns, fmt_rate, Table};
use iolens_workload::FlagWorkload;
use serde::Serialize;

use crate::cli::QuickArgs;
use crate::output::{fail, write_json_or_warn, ProgressLine, EXIT_FAILED, EXIT_USAGE};

/// Removes the scratch directory when quick ends, however it ends.
struct Scratch {
    dir: PathBuf,
    keep: bool,
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

#[derive(Serialize)]
struct QuickTest {
    name: String,
    result: RunResult,
}

#[derive(Serialize)]
struct QuickReport {
    schema_version: u32,
    tool: &'static str,
    tool_version: &'static str,
    command: String,
    directory: String,
    filesystem: String,
    device: Option<String>,
    direct_supported: bool,
    interrupted: bool,
    error: Option<String>,
    tests: Vec<QuickTest>,
}

fn direct_supported(dir: &Path) -> bool {
    let probe = dir.join("direct-probe");
    let ok =
        OpenOptions::new().write(true).create_new(true).custom_flags(libc::O_DIRECT).open(&probe).is_ok();
    let _ = std::fs::remove_file(&probe);
    ok
}

struct Plan {
    rw: &'static str,
    bs: &'static str,
    engine: &'static str,
    qd: u32,
    direct: bool,
}

/// Sync buffered first, then io_uring (direct where supported), each over the four loads.
fn plans(direct: bool) -> Vec<Plan> {
    let loads = [("read", "1m", 4), ("randread", "4k", 32), ("write", "1m", 4), ("randwrite", "4k", 32)];
    let sync = loads.iter().map(|&(rw, bs, _)| Plan { rw, bs, engine: "sync", qd: 1, direct: false });
    let uring = loads.iter().map(|&(rw, bs, qd)| Plan { rw, bs, engine: "io_uring", qd, direct });
    sync.chain(uring).collect()
}

fn label(p: &Plan) -> String {
    let mode = if p.direct { "direct" } else { "buffered" };
    let engine = if p.qd > 1 { format!("{} qd{}", p.engine, p.qd) } else { p.engine.to_string() };
    format!("{} {} {engine} {mode}", p.rw, p.bs)
}

pub fn quick(a: QuickArgs, stop: &Arc<AtomicBool>, command: String) -> Result<(), u8> {
    let out = &a.output;
    let base = a.dir.clone().unwrap_or_else(|| PathBuf::from("."));
    if !base.is_dir() {
        return Err(fail(
            out,
            &command,
            &format!("{} is not a directory", base.display()),
            false,
            EXIT_USAGE,
        ));
    }
    let dir = base.join(format!("iolens-quick-{}", std::process::id()));
    std::fs::create_dir(&dir).map_err(|e| {
        fail(out, &command, &format!("cannot create {}: {e}", dir.display()), false, EXIT_FAILED)
    })?;
    let _scratch = Scratch { dir: dir.clone(), keep: out.keep };
    let direct = direct_supported(&dir);
    let filesystem =
        iolens_device::filesystem_type(&dir).map(|f| f.name.to_string()).unwrap_or_else(|_| "unknown".into());
    let device = iolens_device::device_for_path(&dir).ok().flatten().map(|d| d.name);
    println!(
        "quick: {} on {} ({}), {} per test, {} files{}",
        dir.display(),
        device.as_deref().unwrap_or("no block device"),
        filesystem,
        a.time,
        a.size,
        if direct { "" } else { "; O_DIRECT unsupported here: async tests run buffered" }
    );

    let mut report = QuickReport {
        schema_version: SCHEMA_VERSION,
        tool: "iolens",
        tool_version: env!("CARGO_PKG_VERSION"),
        command: command.clone(),
        directory: dir.display().to_string(),
        filesystem,
        device,
        direct_supported: direct,
        interrupted: false,
        error: None,
        tests: Vec::new(),
    };
    for plan in plans(direct) {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        let writes = plan.rw.contains("write");
        let flags = FlagWorkload {
            target: dir.join(if writes { "write.dat" } else { "read.dat" }),
            rw: plan.rw.into(),
            bs: plan.bs.into(),
            qd: plan.qd,
            engine: plan.engine.into(),
            direct: plan.direct,
            size: Some(a.size.clone()),
            time: Some(a.time.clone()),
            fsync: writes.then(|| "end".to_string()),
            ..FlagWorkload::default()
        };
        let name = label(&plan);
        let job = flags.to_job().map_err(|e| fail(out, &command, &e.to_string(), false, EXIT_USAGE))?;
        let opts = RunOptions {
            keep: true,
            stop: Arc::clone(stop),
            command: command.clone(),
            ..RunOptions::default()
        };
        let progress = ProgressLine::new(out.quiet, &name);
        let result = run_job(&job, &opts, &progress, &LocalBarrier);
        progress.finish();
        match result {
            Ok(r) => {
                let error = r.error.clone();
                report.tests.push(QuickTest { name, result: r });
                if let Some(e) = error {
                    report.error = Some(e);
                    break;
                }
            }
            Err(e) => {
                report.error = Some(format!("{name}: {e}"));
                break;
            }
        }
    }
    report.interrupted = stop.load(Ordering::SeqCst);
    print!("{}", render(&report));
    if let Some(path) = &out.json {
        write_json_or_warn(path, &report);
    }
    match &report.error {
        Some(e) => {
            eprintln!("iolens: error: {e}");
            Err(EXIT_FAILED)
        }
        None => Ok(()),
    }
}

fn render(r: &QuickReport) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let header =
        vec!["test", "IOPS", "MiB/s", "BPS", "io_wait", "p50", "p99", "dev rd MiB", "dev wr MiB", "warnings"];
    let mut table = Table::new(header);
    table.left_aligned = vec![9];
    for t in &r.tests {
        let f = &t.result.aggregate;
        let dev = t.result.device.as_ref();
        let codes: Vec<&str> = t.result.warnings.iter().map(|w| w.code.as_str()).collect();
        table.rows.push(vec![
            t.name.clone(),
            fmt_rate(f.iops),
            fmt_mib(f.bw_bytes_s),
            fmt_rate(f.bps),
            format!("{:.0}%", 100.0 * f.io_wait_fraction),
            fmt_ns(f.lat_ns.p50 as f64),
            fmt_ns(f.lat_ns.p99 as f64),
            dev.map_or("-".into(), |d| fmt_mib(d.read_bytes as f64)),
            dev.map_or("-".into(), |d| fmt_mib(d.write_bytes as f64)),
            codes.join(","),
        ]);
    }
    table.render(&mut s);
    let _ = writeln!(
        s,
        "IOPS, MiB/s: application requests per wall second; BPS: 512-byte blocks per busy second; writes end with an fsync inside the timed phase; dev: bytes the device moved in the same window"
    );
    for t in &r.tests {
        for w in &t.result.warnings {
            let _ = writeln!(s, "warning ({}): {}", t.name, w.message);
        }
    }
    if r.interrupted {
        let _ = writeln!(s, "interrupted: the table covers the tests that ran");
    }
    s
}
