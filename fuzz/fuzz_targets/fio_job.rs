#![no_main]
//! fio job files through the parser and translation (includes answer with the same text, so
//! include nesting is exercised too), then everything the engine derives before I/O.

use libfuzzer_sys::fuzz_target;

#[path = "../common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let env = |v: &str| (v.len() < 8).then(|| v.repeat(3));
    let include = |_: &std::path::Path| Ok(text.to_string());
    if let Ok(fio) = iolens_workload::parse_fio(text, "/fuzz/job.fio", "job", &env, &include) {
        common::exercise(&fio.job);
        let _ = iolens_workload::fio_to_toml(&fio, std::path::Path::new("/fuzz"), "job.fio");
    }
});
