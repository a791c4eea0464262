//! The iolens binary run trace (`IOLTRACE`): the record reader, then the importer over it.
#![no_main]

use iolens_import::Format;
use iolens_record::trace::TraceReader;
use libfuzzer_sys::fuzz_target;

#[path = "../imports.rs"]
mod imports;

fuzz_target!(|data: &[u8]| {
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
