//! The whole `iolens analyze` path: any format's importer feeding the analyzer, the summary,
//! its JSON and terminal page, and the emitted job file, which must always load.
#![no_main]

use iolens_analyze::{emit_workload, render_summary, AnalyzeOptions, Analyzer};
use iolens_import::{import_reader, EventSink, Format};
use iolens_record::event::IoEvent;
use libfuzzer_sys::fuzz_target;

struct Feed(Analyzer);
impl EventSink for Feed {
    fn path(&mut self, id: u32, path: &str) {
        self.0.path(id, path);
    }
    fn event(&mut self, e: &IoEvent) {
        self.0.event(e);
    }
}

const FORMATS: [Format; 5] = [Format::Iolens, Format::Events, Format::Strace, Format::Blkparse, Format::Dxt];

fuzz_target!(|data: &[u8]| {
    let Some((&selector, input)) = data.split_first() else { return };
    let format = FORMATS[selector as usize % FORMATS.len()];
    let opts = AnalyzeOptions { top: 3, union_buffer: 256, ..AnalyzeOptions::default() };
    let mut feed = Feed(Analyzer::new(opts).unwrap());
    if import_reader(input, "fuzz".as_ref(), format, false, &mut feed).is_err() {
        return;
    }
    let summary = feed.0.finish().expect("no exports, and spills go to the temp directory");
    let _ = render_summary(&summary);
    if let Ok(job) = emit_workload(&summary, "/tmp/replay") {
        if let Err(e) = iolens_workload::parse_job(&job, "replay.toml") {
            panic!("emitted job does not load: {e}\n{job}");
        }
    }
});
