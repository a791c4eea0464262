//! The strace text importer, lenient and strict.
#![no_main]

use iolens_import::Format;
use libfuzzer_sys::fuzz_target;

#[path = "../imports.rs"]
mod imports;

fuzz_target!(|data: &[u8]| {
    for strict in [false, true] {
        imports::import_counted(data, "fuzz.txt", Format::Strace, strict);
    }
});
