//! The blkparse text importer, lenient and strict.
#![no_main]

use iolens_import::{import_reader, EventSink, Format};
use iolens_record::event::IoEvent;
use libfuzzer_sys::fuzz_target;

struct Count(u64);
impl EventSink for Count {
    fn path(&mut self, _: u32, _: &str) {}
    fn event(&mut self, _: &IoEvent) {
        self.0 += 1;
    }
}

fuzz_target!(|data: &[u8]| {
    for strict in [false, true] {
        let mut sink = Count(0);
        if let Ok(report) = import_reader(data, "fuzz.txt".as_ref(), Format::Blkparse, strict, &mut sink) {
            assert_eq!(report.events, sink.0);
        }
    }
});
