//! The iolens binary run trace (`IOLTRACE`): the record reader, then the importer over it. And
//! the probe `iolens trace` and its preload run on the head of every program they see started
//! (is it static, is it Go), the other foreign binary the tracer reads.
#![no_main]

use iolens_import::Format;
use iolens_record::program::{elf_is_go, elf_is_static};
use iolens_record::trace::TraceReader;
use libfuzzer_sys::fuzz_target;

#[path = "../imports.rs"]
mod imports;

fuzz_target!(|data: &[u8]| {
    // Both judge the same program headers: either both do, or neither.
    assert_eq!(elf_is_static(data).is_some(), elf_is_go(data).is_some());
    if let Ok(reader) = TraceReader::new(data) {
        for rec in reader {
            if rec.is_err() {
                break;
            }
        }
    }
    if let Some(events) = imports::import_counted(data, "fuzz.iolt", Format::Iolens, false) {
        // 32-byte records after a header of at least 32 bytes.
        assert!(events <= data.len() as u64 / 32);
    }
});
