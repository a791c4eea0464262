//! iolens event streams (`IOLEVT01`): the frame reader, then the importer over it.
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
