//! The whole `iolens analyze` path: any format's importer feeding the analyzer, the summary,
//! its JSON and terminal page, and the emitted job file, which must always load. The events cut
//! in two, each half on an analyzer of its own and the two merged, give the same summary.
#![no_main]

use iolens_analyze::{emit_workload, AnalyzeError, AnalyzeOptions, Analyzer};
use iolens_report::text::trace::render_summary;
use iolens_import::{import_reader, EventSink, Format};
use iolens_record::event::IoEvent;
use libfuzzer_sys::fuzz_target;

#[derive(Default)]
struct Collect {
    paths: Vec<(u32, String)>,
    events: Vec<IoEvent>,
}
impl EventSink for Collect {
    fn path(&mut self, id: u32, path: &str) {
        self.paths.push((id, path.to_string()));
    }
    fn event(&mut self, e: &IoEvent) {
        self.events.push(*e);
    }
}

fn analyzer(paths: &[(u32, String)], events: &[IoEvent]) -> Analyzer {
    analyzer_with(paths, events, AnalyzeOptions::default())
}

fn analyzer_with(paths: &[(u32, String)], events: &[IoEvent], opts: AnalyzeOptions) -> Analyzer {
    let opts = AnalyzeOptions { top_files: 3, top_processes: 3, slowest: 3, union_buffer: 256, ..opts };
    let mut a = Analyzer::new(opts).unwrap();
    for (id, path) in paths {
        a.path(*id, path);
    }
    for e in events {
        a.event(e);
    }
    a
}

const FORMATS: [Format; 5] = [Format::Iolens, Format::Events, Format::Strace, Format::Blkparse, Format::Dxt];

fuzz_target!(|data: &[u8]| {
    let Some((&selector, input)) = data.split_first() else { return };
    let format = FORMATS[selector as usize % FORMATS.len()];
    let mut feed = Collect::default();
    if import_reader(input, "fuzz".as_ref(), format, false, &mut feed).is_err() {
        return;
    }
    let summary =
        analyzer(&feed.paths, &feed.events).finish().expect("no exports, and spills go to the temp directory");
    let cut = input.len() % (feed.events.len() + 1);
    let mut merged = analyzer(&feed.paths, &feed.events[..cut]);
    merged.merge(analyzer(&feed.paths, &feed.events[cut..]));
    let merged = merged.finish().unwrap();
    assert_eq!(format!("{merged:?}"), format!("{summary:?}"), "the merged halves give the whole");
    // Swept as the calls arrive (a run's calls on one file swept once for its rows), with and
    // without a reorder window: the stored summary when the calls were in order, else refused.
    for reorder_window in [0, 4] {
        let opts = AnalyzeOptions { in_order: true, reorder_window, ..AnalyzeOptions::default() };
        let mut swept = analyzer_with(&feed.paths, &feed.events[..cut], opts.clone());
        swept.merge(analyzer_with(&feed.paths, &feed.events[cut..], opts));
        let in_order = swept.in_order();
        match swept.finish() {
            Ok(s) => {
                assert!(in_order);
                assert_eq!(format!("{s:?}"), format!("{summary:?}"), "swept (window {reorder_window})");
            }
            Err(AnalyzeError::OutOfOrder) => assert!(!in_order),
            Err(e) => panic!("{e}"),
        }
    }
    let _ = render_summary(&summary);
    if let Ok(job) = emit_workload(&summary, "/tmp/replay") {
        if let Err(e) = iolens_workload::parse_job(&job, "replay.toml") {
            panic!("emitted job does not load: {e}\n{job}");
        }
    }
});
