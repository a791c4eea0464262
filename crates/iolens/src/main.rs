//! The `iolens` command: parses arguments, runs the engine, prints and exports results.
//! Everything of substance lives in the library crates; this binary only wires them together.

#[macro_use]
extern crate iolens_output;

mod beff_cmd;
#[cfg(feature = "mpi")]
mod beff_io_cmd;
mod clean_cmd;
mod cli;
mod compare_cmd;
mod help_cmd;
mod monitor;
#[cfg(feature = "mpi")]
mod mpi_cmd;
mod output;
mod quick;
mod report_cmd;
mod run_cmd;
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
mod same_job;
mod stats_cmd;
mod suites;
mod trace_cmd;
// The one skip helper of the workspace's tests: tests without the shared data sets skip, or fail
// under IOLENS_REQUIRE_TOOLS=1.
#[cfg(test)]
#[path = "../tests/integration/util/prerequisite.rs"]
mod prerequisite;

use std::ffi::OsString;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use clap::Parser;
use iolens_suites::LocalRunner;

/// Exit code when stdout was a closed pipe: what a shell shows for a process killed by SIGPIPE
/// (128 + 13), the usual fate of a writer into `| head`; iolens finishes its files first.
const EXIT_BROKEN_PIPE: u8 = 141;

/// Result flags whose value may be stdout.
const RESULT_FLAGS: [&str; 5] = ["--json", "--csv", "--parquet", "--emit-workload", "--html"];

fn main() -> ExitCode {
    let stop = Arc::new(AtomicBool::new(false));
    iolens_trace::signals::install(&stop);
    // The union's spill directories are scratch directories of iolens's own: recorded, so a
    // killed analysis leaves nothing `iolens clean` cannot find.
    iolens_analyze::set_spill_dir_maker(iolens_trace::registered_spill_dir);
    let argv: Vec<OsString> = std::env::args_os().collect();
    let tool = iolens_report::envelope::Tool {
        name: "iolens".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        git_commit: env!("IOLENS_GIT_COMMIT").into(),
    };
    iolens_report::publish::start_invocation(tool, &argv);
    let command = argv.iter().map(|a| a.to_string_lossy()).collect::<Vec<_>>().join(" ");
    if RESULT_FLAGS.iter().any(|f| output::flag_value(&argv, f).is_some_and(|p| iolens_report::is_stdout(&p)))
    {
        output::text_to_stderr();
    }
    if let Some(message) = cli::unit_apart_from_its_number(&argv).or_else(|| parquet_left_out(&argv)) {
        errln!("iolens: error: {message}");
        if let Some(path) = output::flag_value(&argv, "--json") {
            output::report_error_document(&path, &message, output::EXIT_USAGE);
        }
        return ExitCode::from(output::EXIT_USAGE);
    }
    let mut args = match cli::Cli::try_parse_from(&argv) {
        Ok(a) => a,
        Err(e) => return ExitCode::from(usage_error(&e, &argv)),
    };
    if let cli::Command::Run(a) = &mut args.command {
        a.job = a.job.take().or(a.job_file.take());
    }
    if let Err(e) = iolens_record::clock::apply_test_skew_from_env() {
        errln!("iolens: error: {e}");
        return ExitCode::from(output::EXIT_USAGE);
    }
    let launch = iolens_mpi::detect().filter(|l| l.many());
    if let Some(l) = &launch {
        if let cli::Command::Trace(a) = args.command {
            // Tracing a job needs no MPI in iolens: the ranks meet in a directory.
            return ExitCode::from(match iolens_trace::RankOfJob::from_launch(l) {
                Ok(job) => with_failed_writes(trace_cmd::trace(a, Some(job)).err().unwrap_or(0)),
                Err(e) => {
                    errln!("iolens: error: {e}");
                    output::EXIT_USAGE
                }
            });
        }
    }
    let asked_mpi = matches!(&args.command, cli::Command::Run(a) if a.mpi);
    if launch.is_some() || asked_mpi {
        return ExitCode::from(with_failed_writes(under_mpi(args, launch, &stop, command)));
    }
    let is_trace = matches!(args.command, cli::Command::Trace(_));
    if !matches!(
        args.command,
        cli::Command::Clean(_)
            | cli::Command::Monitor(_)
            | cli::Command::Analyze(_)
            | cli::Command::Correlate(_)
            | cli::Command::Convert(_)
            | cli::Command::Compare(_)
            | cli::Command::Report(_)
            | cli::Command::Completions(_)
            | cli::Command::Man(_)
    ) {
        clean_cmd::remove_leftovers_quietly();
    }
    let outcome = match args.command {
        cli::Command::Run(a) => run_cmd::run(*a, &stop, command),
        cli::Command::Quick(a) => quick::quick(&LocalRunner, a, &stop, command),
        cli::Command::BeffIo(a) => suites::beff_io(a, &stop),
        cli::Command::Beff(a) => beff_cmd::refuse(&a),
        cli::Command::Doe(a) => stats_cmd::doe(a, &stop),
        cli::Command::Validate(a) => suites::validate(a, &stop, command),
        cli::Command::Correlate(a) => stats_cmd::correlate(a),
        cli::Command::Monitor(a) => monitor::monitor(a, &stop),
        cli::Command::Sweep(a) => suites::sweep(&LocalRunner, a, &stop, command),
        cli::Command::Saturate(a) => suites::saturate(&LocalRunner, a, &stop, command),
        cli::Command::WriteModes(a) => suites::write_modes(&LocalRunner, a, &stop, command),
        cli::Command::Trace(a) => trace_cmd::trace(a, None),
        cli::Command::Analyze(a) => trace_cmd::analyze(a, &stop),
        cli::Command::Convert(a) => run_cmd::convert(a),
        cli::Command::Compare(a) => compare_cmd::compare(a),
        cli::Command::Report(a) => report_cmd::report(a),
        cli::Command::Completions(a) => help_cmd::completions(a.shell),
        cli::Command::Man(a) => help_cmd::man(a),
        cli::Command::Clean(_) => clean_cmd::clean(),
    };
    let mut code = outcome.err().unwrap_or(0);
    // A traced program's own status stands, also when it was interrupted.
    if !is_trace && stop.load(Ordering::SeqCst) {
        code = (128 + iolens_trace::signals::last().unwrap_or(libc::SIGINT)).clamp(1, 255) as u8;
    }
    code = with_failed_writes(code);
    if let Some(e) = output::stdout_error() {
        errln!("iolens: error: cannot write to stdout: {e}");
        if code == 0 && !is_trace {
            code = if e.raw_os_error() == Some(libc::EPIPE) { EXIT_BROKEN_PIPE } else { output::EXIT_FAILED };
        }
    }
    ExitCode::from(code)
}

/// `--parquet` in a build without the cargo feature `parquet`: refused before anything runs.
fn parquet_left_out(argv: &[OsString]) -> Option<String> {
    (!cfg!(feature = "parquet") && output::flag_value(argv, "--parquet").is_some()).then(|| {
        "--parquet: this iolens was built without Parquet (cargo feature `parquet`, on by default)\n  \
         hint: rebuild with the default features, or write --json or --csv"
            .to_string()
    })
}

/// A command that succeeded but could not write one of its result files fails (every command
/// alike, under MPI too).
fn with_failed_writes(code: u8) -> u8 {
    if code == 0 && output::write_failed() {
        output::EXIT_FAILED
    } else {
        code
    }
}

/// Started by an MPI launcher with more than one process, or with `run --mpi`.
fn under_mpi(
    args: cli::Cli,
    launch: Option<iolens_mpi::Launch>,
    stop: &Arc<AtomicBool>,
    command: String,
) -> u8 {
    let how =
        launch.as_ref().map_or_else(|| "asked to run under MPI (--mpi)".into(), iolens_mpi::Launch::describe);
    #[cfg(not(feature = "mpi"))]
    {
        // Every rank refuses: run alone, each would write the same files and the same JSON.
        let _ = (args, stop, command);
        errln!(
            "iolens: error: {how}, but this iolens was built without MPI support; build with \
             `cargo build --release --features mpi` (needs an MPI library such as Open MPI, and libclang)"
        );
        output::EXIT_USAGE
    }
    #[cfg(feature = "mpi")]
    match args.command {
        cli::Command::Run(a) => {
            clean_cmd::remove_leftovers_quietly();
            mpi_cmd::run(*a, stop, command).err().unwrap_or(0)
        }
        cli::Command::Beff(a) => beff_cmd::run(a, stop).err().unwrap_or(0),
        cli::Command::Sweep(a) => {
            let json = a.suite.json.clone();
            let fp = iolens_mpi::fingerprint::of_suite(&a);
            mpi_suite(json, command, &fp, |runner, command| suites::sweep(runner, a, stop, command))
        }
        cli::Command::Saturate(a) => {
            let json = a.suite.json.clone();
            let fp = iolens_mpi::fingerprint::of_suite(&a);
            mpi_suite(json, command, &fp, |runner, command| suites::saturate(runner, a, stop, command))
        }
        cli::Command::WriteModes(a) => {
            let json = a.json.clone();
            let fp = iolens_mpi::fingerprint::of_suite(&a);
            mpi_suite(json, command, &fp, |runner, command| suites::write_modes(runner, a, stop, command))
        }
        cli::Command::Quick(a) => {
            let json = a.output.json.clone();
            let mut fp = iolens_mpi::fingerprint::of_suite(&a);
            // Its b_eff_io part shares MPI-IO files in this directory: one for every rank.
            fp.push("dir", format!("{:?}", a.dir));
            mpi_suite(json, command, &fp, |runner, command| quick::quick(runner, a, stop, command))
        }
        cli::Command::BeffIo(a) => {
            clean_cmd::remove_leftovers_quietly();
            beff_io_cmd::run(a, stop).err().unwrap_or(0)
        }
        _ => {
            errln!(
                "iolens: error: {how}; only `run`, `beff`, `beff-io`, `sweep`, `saturate`, `write-modes` and \
                 `quick` run across MPI ranks; run other commands without mpirun"
            );
            output::EXIT_USAGE
        }
    }
}

/// A suite under MPI: every rank runs it, each point across all ranks; rank 0 reports.
#[cfg(feature = "mpi")]
fn mpi_suite(
    json: Option<std::path::PathBuf>,
    command: String,
    fingerprint: &iolens_mpi::wire::JobFingerprint,
    body: impl FnOnce(&dyn iolens_suites::PointRunner, String) -> Result<(), u8>,
) -> u8 {
    clean_cmd::remove_leftovers_quietly();
    iolens_mpi::across::suite(json.as_deref(), fingerprint, |runner| body(runner, command)).err().unwrap_or(0)
}

/// A command line clap rejected: its message, and the JSON error report when `--json` was given
/// (scripts read the JSON, not stderr). Help and version are not errors.
fn usage_error(e: &clap::Error, argv: &[OsString]) -> u8 {
    let _ = e.print();
    let code = e.exit_code().clamp(0, 255) as u8;
    if !e.use_stderr() {
        return code;
    }
    if let Some(path) = output::flag_value(argv, "--json") {
        let text = e.to_string();
        let message = text.lines().next().unwrap_or_default().trim_start_matches("error: ");
        output::report_error_document(&path, message, code);
    }
    code
}
