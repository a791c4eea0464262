//! The `iolens` command: parses arguments, runs the engine, prints and exports results.
//! Everything of substance lives in the library crates; this binary only wires them together.

mod cli;
mod monitor;
mod output;
mod quick;
mod run_cmd;
mod stats_cmd;
mod suites;
mod trace_cmd;

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use clap::Parser;

/// Exit code of a run stopped by Ctrl-C (128 + SIGINT), as shells report it.
const EXIT_INTERRUPTED: u8 = 130;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    let stop = Arc::new(AtomicBool::new(false));
    let handler_stop = Arc::clone(&stop);
    // First Ctrl-C: stop the agents, keep the results so far, clean up. Second: leave now.
    let _ = ctrlc::set_handler(move || {
        if handler_stop.swap(true, Ordering::SeqCst) {
            std::process::exit(EXIT_INTERRUPTED as i32);
        }
    });
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    let outcome = match args.command {
        cli::Command::Run(a) => run_cmd::run(*a, &stop, command),
        cli::Command::Quick(a) => quick::quick(a, &stop, command),
        cli::Command::BeffIo(a) => suites::beff_io(a, &stop, command),
        cli::Command::Doe(a) => stats_cmd::doe(a, &stop, command),
        cli::Command::Validate(a) => suites::validate(a, &stop, command),
        cli::Command::Correlate(a) => stats_cmd::correlate(a, command),
        cli::Command::Monitor(a) => monitor::monitor(a, &stop, command),
        cli::Command::Sweep(a) => suites::sweep(a, &stop, command),
        cli::Command::Saturate(a) => suites::saturate(a, &stop, command),
        cli::Command::WriteModes(a) => suites::write_modes(a, &stop, command),
        cli::Command::Trace(a) => trace_cmd::trace(a, command),
        cli::Command::Analyze(a) => trace_cmd::analyze(a, &stop, command),
    };
    match outcome {
        _ if stop.load(Ordering::SeqCst) => ExitCode::from(EXIT_INTERRUPTED),
        Ok(()) => ExitCode::SUCCESS,
        Err(code) => ExitCode::from(code),
    }
}
