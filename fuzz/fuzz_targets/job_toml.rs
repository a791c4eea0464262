#![no_main]
//! Job files through the real entry point, then everything the engine derives before I/O.

use libfuzzer_sys::fuzz_target;

#[path = "../common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(job) = iolens_workload::parse_job(text, "/fuzz/job.toml") {
        common::exercise(&job);
    }
});
