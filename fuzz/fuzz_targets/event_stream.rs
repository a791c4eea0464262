//! iolens event streams (`IOLEVT01`): the frame reader, then the importer over it.
#![no_main]

use iolens_import::{import_reader, EventSink, Format};
use iolens_record::event::{EventReader, IoEvent};
use libfuzzer_sys::fuzz_target;

struct Count(u64);
impl EventSink for Count {
    fn path(&mut self, _: u32, _: &str) {}
    fn event(&mut self, _: &IoEvent) {
        self.0 += 1;
    }
}

fuzz_target!(|data: &[u8]| {
    if let Ok(mut reader) = EventReader::new(data) {
        while let Ok(Some(_)) = reader.next_event() {}
        assert!(reader.offset() <= data.len() as u64);
    }
    let mut sink = Count(0);
    if let Ok(report) = import_reader(data, "fuzz.evt".as_ref(), Format::Events, false, &mut sink) {
        assert_eq!(report.events, sink.0);
    }
});
