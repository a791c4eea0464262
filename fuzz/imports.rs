//! The check every importer target makes: what an importer reports having delivered is what
//! reached its sink.

use iolens_import::{import_reader, EventSink, Format};
use iolens_record::event::IoEvent;

struct Count(u64);

impl EventSink for Count {
    fn path(&mut self, _: u32, _: &str) {}
    fn event(&mut self, _: &IoEvent) {
        self.0 += 1;
    }
}

/// Imports `data` as `format`; when the input is accepted, checks the report against the
/// events delivered and returns their number.
pub fn import_counted(data: &[u8], name: &str, format: Format, strict: bool) -> Option<u64> {
    let mut sink = Count(0);
    let report = import_reader(data, name.as_ref(), format, strict, &mut sink).ok()?;
    assert_eq!(report.events, sink.0);
    Some(sink.0)
}
