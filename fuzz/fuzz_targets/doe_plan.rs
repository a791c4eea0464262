#![no_main]
//! Experiment plans (a job plus `[doe]`) through the real parser, then the run list, the CSV
//! header and each combination's job as the study would build them.

use iolens_suites::doe::Plan;
use libfuzzer_sys::fuzz_target;

#[path = "../common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(plan) = Plan::parse(text, std::path::Path::new("/fuzz/plan.toml")) else { return };
    let runs = plan.runs();
    assert_eq!(runs.len() as u64, plan.runs_total());
    assert!(runs.len() as u64 <= iolens_suites::doe::MAX_RUNS);
    let header = plan.header();
    assert!(!header.contains('\n'));
    for run in runs.iter().take(4) {
        let job = plan.job(&run.levels).expect("every combination was validated");
        common::exercise(&job);
    }
});
