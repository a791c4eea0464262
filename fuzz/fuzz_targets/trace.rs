//! The iolens binary run trace (`IOLTRACE`): the record reader, then the importer over it.
#![no_main]

use iolens_import::{import_reader, EventSink, Format};
use iolens_record::event::IoEvent;
use iolens_record::trace::TraceReader;
use libfuzzer_sys::fuzz_target;

struct Count(u64);
impl EventSink for Count {
    fn path(&mut self, _: u32, _: &str) {}
    fn event(&mut self, _: &IoEvent) {
        self.0 += 1;
    }
}

fuzz_target!(|data: &[u8]| {
    if let Ok(reader) = TraceReader::new(data) {
        for rec in reader {
            if rec.is_err() {
                break;
            }
        }
    }
    let mut sink = Count(0);
    if let Ok(report) = import_reader(data, "fuzz.iolt".as_ref(), Format::Iolens, false, &mut sink) {
        assert_eq!(report.events, sink.0);
        // 32-byte records after a header of at least 32 bytes.
        assert!(report.events <= data.len() as u64 / 32);
    }
});
