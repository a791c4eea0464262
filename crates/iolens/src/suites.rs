//! `iolens sweep`, `saturate` and `write-modes`: argument handling around `iolens_suites`.
//! Each runs its points through a [`PointRunner`]: alone [`LocalRunner`], under `mpirun` the
//! MPI runner of `mpi_cmd`, with which only rank 0 prints and writes.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use iolens_report::text;
use iolens_suites::{
    beff_io, saturate, sweep, validate as validation, write_modes, LocalRunner, PointRunner, SuiteContext,
    SuiteError,
};
use iolens_workload::{parse_duration, parse_size};

use crate::cli::{BeffIoArgs, OutputArgs, SaturateArgs, SweepArgs, ValidateArgs, WriteModesArgs};
use crate::output::{fail, ProgressLine, EXIT_FAILED, EXIT_USAGE};

fn outputs(json: &Option<std::path::PathBuf>) -> OutputArgs {
    OutputArgs { json: json.clone(), csv: None, keep: false, quiet: true }
}

fn size(flag: &str, v: &str, out: &OutputArgs) -> Result<u64, u8> {
    parse_size(v).map_err(|e| fail(out, &format!("{flag}: {e}"), false, EXIT_USAGE))
}

fn duration(flag: &str, v: &str, out: &OutputArgs) -> Result<std::time::Duration, u8> {
    parse_duration(v)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| fail(out, &format!("{flag}: {v:?} is not a positive duration"), false, EXIT_USAGE))
}

/// The target of a suite, given as the positional TARGET or as `--target` (clap requires one).
pub fn suite_target(
    positional: &Option<std::path::PathBuf>,
    flag: &Option<std::path::PathBuf>,
) -> std::path::PathBuf {
    positional.clone().or_else(|| flag.clone()).unwrap_or_default()
}

/// [`iolens_suites::existing_target`] for a suite: reported as bad input. Under MPI a path one rank does not
/// see is that rank's alone: the runner ends every rank (the others would wait for it).
pub fn target(
    runner: &dyn PointRunner,
    flag: &str,
    path: &Path,
    what: &str,
    out: &OutputArgs,
) -> Result<(), u8> {
    iolens_suites::existing_target(flag, path, what).map_err(|e| {
        if runner.ranks() > 1 {
            let _ = runner.failed_alone(e.clone());
        }
        fail(out, &e, false, EXIT_USAGE)
    })
}

/// Where a suite's result goes besides the terminal.
struct ResultFiles<'a> {
    json: &'a Option<std::path::PathBuf>,
    parquet: &'a Option<std::path::PathBuf>,
}

/// Prints a suite's table and writes its JSON and Parquet files, `job` (what ran, told by the
/// result) in their envelope; under MPI only rank 0 does (every rank has the same outcome, so
/// the others stay silent).
fn finish<R: iolens_report::Body>(
    result: Result<R, SuiteError>,
    job: impl FnOnce(&R) -> serde_json::Value,
    render: impl Fn(&R) -> String,
    files: ResultFiles<'_>,
    stop: &AtomicBool,
    runner: &dyn PointRunner,
) -> Result<(), u8> {
    let ResultFiles { json, parquet } = files;
    let out = outputs(json);
    if runner.rank() != 0 {
        return result.map(|_| ()).map_err(|_| EXIT_FAILED);
    }
    let r = result.map_err(|e| fail(&out, &e.to_string(), stop.load(Ordering::SeqCst), EXIT_FAILED))?;
    iolens_report::publish::publish_points(&r, job(&r), &render(&r), json.as_deref(), parquet.as_deref());
    Ok(())
}

/// The smallest sensible request: the logical sector of the device behind `target`.
fn logical_sector(target: &Path) -> u64 {
    iolens_device::device_for_path(target).ok().flatten().map_or(512, |d| d.logical_sector.max(512))
}

pub fn sweep(
    runner: &dyn PointRunner,
    a: SweepArgs,
    stop: &Arc<AtomicBool>,
    command: String,
) -> Result<(), u8> {
    let out = outputs(&a.suite.json);
    let suite_target = suite_target(&a.suite.target, &a.suite.target_flag);
    target(runner, "", &suite_target, iolens_suites::SUITE_TARGET, &out)?;
    let mut cfg = sweep::SweepConfig::new(suite_target.clone());
    cfg.rw = a.rw.clone();
    cfg.threads = a.threads.clone();
    cfg.direct = !a.buffered;
    cfg.time_per_point = duration("--time", &a.suite.time, &out)?;
    cfg.region = size("--size", &a.suite.size, &out)?;
    cfg.min_size = match &a.min_bs {
        Some(v) => size("--min-bs", v, &out)?,
        None => logical_sector(&suite_target),
    };
    cfg.max_size = size("--max-bs", &a.max_bs, &out)?;
    cfg.floor_iops = a.floor_iops;
    let progress = ProgressLine::new(a.suite.quiet || runner.rank() != 0, "sweep");
    let result = sweep::sweep(
        &cfg,
        &SuiteContext::new(a.suite.allow_overwrite, a.suite.keep, stop, &progress, &command, runner),
    );
    progress.finish();
    finish(
        result,
        |_| cfg.job(),
        text::sweep::render,
        ResultFiles { json: &a.suite.json, parquet: &a.suite.parquet },
        stop,
        runner,
    )
}

pub fn saturate(
    runner: &dyn PointRunner,
    a: SaturateArgs,
    stop: &Arc<AtomicBool>,
    command: String,
) -> Result<(), u8> {
    let out = outputs(&a.suite.json);
    let suite_target = suite_target(&a.suite.target, &a.suite.target_flag);
    target(runner, "", &suite_target, iolens_suites::SUITE_TARGET, &out)?;
    let mut cfg = saturate::SaturateConfig::new(suite_target);
    cfg.bs = size("--bs", &a.bs, &out)?;
    cfg.direct = !a.buffered;
    cfg.use_threads = a.threads;
    cfg.max_concurrency = a.max_concurrency;
    cfg.time_per_point = duration("--time", &a.suite.time, &out)?;
    cfg.region = size("--size", &a.suite.size, &out)?;
    cfg.loads = a.rw.clone();
    cfg.cores_per_node = a.cores_per_node;
    let progress = ProgressLine::new(a.suite.quiet || runner.rank() != 0, "saturate");
    let result = saturate::saturate(
        &cfg,
        &SuiteContext::new(a.suite.allow_overwrite, a.suite.keep, stop, &progress, &command, runner),
    );
    progress.finish();
    finish(
        result,
        |_| cfg.job(),
        text::saturate::render,
        ResultFiles { json: &a.suite.json, parquet: &a.suite.parquet },
        stop,
        runner,
    )
}

pub fn write_modes(
    runner: &dyn PointRunner,
    a: WriteModesArgs,
    stop: &Arc<AtomicBool>,
    command: String,
) -> Result<(), u8> {
    let out = outputs(&a.json);
    let suite_target = suite_target(&a.target, &a.target_flag);
    target(runner, "", &suite_target, iolens_suites::SUITE_TARGET, &out)?;
    let mut cfg = write_modes::WriteModesConfig::new(suite_target);
    cfg.bs = size("--bs", &a.bs, &out)?;
    if a.threads == 0 {
        return Err(fail(&out, "--threads: give at least 1", false, EXIT_USAGE));
    }
    cfg.threads = a.threads;
    if let Some(v) = &a.bytes {
        cfg.bytes = Some(size("--bytes", v, &out)?).filter(|b| *b > 0);
        if cfg.bytes.is_none() {
            return Err(fail(&out, "--bytes: must be positive", false, EXIT_USAGE));
        }
    }
    if let Some(v) = &a.time {
        cfg.time_cap = Some(duration("--time", v, &out)?);
    }
    if let Some(v) = &a.size {
        cfg.region = Some(size("--size", v, &out)?);
    }
    let progress = ProgressLine::new(a.quiet || runner.rank() != 0, "write-modes");
    let result = write_modes::write_modes(
        &cfg,
        &SuiteContext::new(a.allow_overwrite, a.keep, stop, &progress, &command, runner),
    );
    progress.finish();
    finish(
        result,
        |r| cfg.job_as_run(Some(r)),
        text::write_modes::render,
        ResultFiles { json: &a.json, parquet: &a.parquet },
        stop,
        runner,
    )
}

/// What `beff-io`'s flags say, for the thread and the MPI-IO version alike; the message why not.
pub fn beff_io_config(a: &BeffIoArgs) -> Result<beff_io::BeffIoConfig, String> {
    let memory = match &a.memory {
        Some(v) => parse_size(v).map_err(|e| format!("--memory: {e}"))?,
        None => iolens_device::memory_total().unwrap_or(1 << 30),
    };
    let mut cfg = beff_io::BeffIoConfig::new(a.dir.clone(), memory);
    cfg.time = parse_duration(&a.time)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| format!("--time: {:?} is not a positive duration", a.time))?;
    if let Some(v) = &a.mpart {
        cfg.mpart = parse_size(v).map_err(|e| format!("--mpart: {e}"))?;
    }
    Ok(cfg)
}

pub fn beff_io(a: BeffIoArgs, stop: &Arc<AtomicBool>) -> Result<(), u8> {
    let out = outputs(&a.json);
    if !a.partitions.is_empty() || !a.hint.is_empty() {
        let message = "--partitions and --hint are for b_eff_io over MPI-IO: run `mpirun -np N iolens beff-io DIR \
                       --partitions 1,2,4` with an iolens built with `--features mpi` (alone, --ranks sets threads)";
        return Err(fail(&out, message, false, EXIT_USAGE));
    }
    // Alone: a missing directory is bad input. Under MPI each rank checks its own view of it
    // (beff_io::check), and one that lacks it ends the job naming itself.
    target(&LocalRunner, "", &a.dir, iolens_suites::SUITE_DIR, &out)?;
    let mut cfg = beff_io_config(&a).map_err(|e| fail(&out, &e, false, EXIT_USAGE))?;
    if !a.ranks.is_empty() {
        cfg.ranks = a.ranks.clone();
    }
    if !a.quiet {
        errln!(
            "b_eff_io: {} partition(s) of T = {:.0} s each in {}",
            cfg.ranks.len(),
            cfg.time.as_secs_f64(),
            a.dir.display()
        );
    }
    let progress = ProgressLine::new(a.quiet, "beff-io");
    let result = beff_io::run(&cfg, stop, &|s| s.show(&progress));
    progress.finish();
    finish(
        result,
        |_| cfg.job(),
        text::beff_io::render,
        ResultFiles { json: &a.json, parquet: &a.parquet },
        stop,
        &LocalRunner,
    )
}

pub fn validate(a: ValidateArgs, stop: &Arc<AtomicBool>, command: String) -> Result<(), u8> {
    let out = outputs(&a.json);
    target(&LocalRunner, "", &a.dir, iolens_suites::SUITE_DIR, &out)?;
    if let Some(extra) = &a.target {
        target(
            &LocalRunner,
            "--target ",
            extra,
            "the extra target must be an existing directory or file",
            &out,
        )?;
    }
    let mut cfg = validation::ValidateConfig::new(a.dir.clone());
    cfg.volume = size("--volume", &a.volume, &out)?;
    if a.repeat == 0 {
        return Err(fail(&out, "--repeat: give at least 1", false, EXIT_USAGE));
    }
    cfg.repeat = a.repeat;
    cfg.sets = a.sets.clone();
    cfg.extra_target = a.target.clone();
    let progress = ProgressLine::new(a.quiet, "validate");
    // validate only writes the files it lays out in a directory of its own.
    let result = validation::validate(
        &cfg,
        &SuiteContext::new(false, a.keep, stop, &progress, &command, &LocalRunner),
    );
    progress.finish();
    finish(
        result,
        |_| cfg.job(),
        text::validate::render,
        ResultFiles { json: &a.json, parquet: &a.parquet },
        stop,
        &LocalRunner,
    )
}
