//! iolens event streams (`IOLEVT02`, and `IOLEVT01`): the frame reader, then the importer over
//! it. Seeds 0-2 are version 1 streams, seeds 3 and 4 version 2 (compact events in blocks,
//! written by the preload tracing `cat` and `dd`).
#![no_main]

use iolens_import::Format;
use iolens_record::event::EventReader;
use libfuzzer_sys::fuzz_target;

#[path = "../imports.rs"]
mod imports;

fuzz_target!(|data: &[u8]| {
    if let Ok(mut reader) = EventReader::new(data) {
        while let Ok(Some(_)) = reader.next_event() {}
        assert!(reader.offset() <= data.len() as u64);
    }
    imports::import_counted(data, "fuzz.evt", Format::Events, false);
});
