//! The binary Darshan log reader, lenient and strict. Seeds: two hand-made logs in the corpus,
//! and scripts/fuzz adds the small shared logs (../shared/data/darshan) when they are there.
#![no_main]

use iolens_import::Format;
use libfuzzer_sys::fuzz_target;

#[path = "../imports.rs"]
mod imports;

fuzz_target!(|data: &[u8]| {
    for strict in [false, true] {
        imports::import_counted(data, "fuzz.darshan", Format::Darshan, strict);
    }
});
