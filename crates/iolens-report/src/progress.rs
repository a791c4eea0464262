//! Progress lines on stderr: a run's (elapsed, ETA, current rates), the reading of large
//! inputs (`analyze`, `trace`'s summary), and the share of a command made of parts (`quick`).
//! Hidden when quiet or when stderr is not a terminal.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use iolens_engine::{Progress, RunObserver};
use iolens_import::ReadProgress;

/// A progress line with ETA on stderr (hidden when stderr is not a terminal): elapsed time,
/// ETA, totals so far and the current rates (over the last second or so, not the average since
/// the start, so that a slowing device shows).
pub struct ProgressLine {
    bar: ProgressBar,
    rates: std::sync::Mutex<CurrentRate>,
    /// The whole command this line is one part of (quick), told after the part's own figures.
    whole: Option<PartOfPlan>,
}

impl ProgressLine {
    pub fn new(quiet: bool, label: &str) -> ProgressLine {
        ProgressLine::with_template(quiet, label, "{prefix} [{bar:30}] {elapsed_precise} ETA {eta} {msg}")
    }

    fn with_template(quiet: bool, label: &str, template: &str) -> ProgressLine {
        let bar = if quiet { ProgressBar::hidden() } else { ProgressBar::new(1000) };
        bar.set_style(ProgressStyle::with_template(template).expect("valid template").progress_chars("=> "));
        bar.set_prefix(label.to_string());
        bar.enable_steady_tick(Duration::from_millis(200));
        ProgressLine { bar, rates: std::sync::Mutex::new(CurrentRate::default()), whole: None }
    }

    /// The line of one part of a command made of parts: the part's own progress, then the
    /// share of the whole command done and its ETA.
    pub fn for_part(quiet: bool, label: &str, whole: PartOfPlan) -> ProgressLine {
        ProgressLine { whole: Some(whole), ..ProgressLine::new(quiet, label) }
    }

    /// `what`, followed by where the whole command stands when this line is one of its parts.
    fn show(&self, what: String, part_fraction: Option<f64>) {
        let message = match &self.whole {
            Some(whole) => {
                let share = whole.share_done(whole.part_started.elapsed().as_secs_f64(), part_fraction);
                format!("{what} | {}", whole.describe(whole.whole_started.elapsed().as_secs_f64(), share))
            }
            None => what,
        };
        self.bar.set_message(message);
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }

    /// Where the reading of input files stands: `bytes` of `total_bytes` read and `records`
    /// passed on after `elapsed_s`, while doing `what`.
    fn reading(&self, what: &str, elapsed_s: f64, bytes: u64, records: u64, total_bytes: u64) {
        self.bar.set_position((share_read(bytes, total_bytes) * 1000.0) as u64);
        let mut rates = self.rates.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        rates.update(elapsed_s, records, bytes);
        let message = rates.reading_message(what, bytes, records, total_bytes);
        drop(rates);
        self.show(message, None);
    }
}

/// Share of the input read, 0 to 1 (0 for an empty input: nothing to tell).
fn share_read(bytes: u64, total_bytes: u64) -> f64 {
    if total_bytes == 0 {
        0.0
    } else {
        (bytes as f64 / total_bytes as f64).clamp(0.0, 1.0)
    }
}

/// The line of a command that reads large inputs (`analyze`, `trace`'s summary): share of the
/// input bytes read, records so far, current records/s and MiB/s, ETA. The importers add to
/// the atomic counters of a [`ReadProgress`] once per buffer; a thread of its own reads them a
/// few times a second, so nothing is locked or allocated per record. Shown once the command
/// has run [`READING_LINE_AFTER`], when not quiet and stderr is a terminal.
pub struct ReadingLine {
    shared: Arc<ReadingShared>,
    display: Option<std::thread::JoinHandle<()>>,
}

struct ReadingShared {
    progress: ReadProgress,
    total_bytes: u64,
    /// What is being done: reading, a second pass, summarizing (changes a few times a run).
    what: Mutex<String>,
    done: AtomicBool,
}

/// Commands that end sooner show no line (it would only flicker).
const READING_LINE_AFTER: Duration = Duration::from_secs(2);
/// How often the line reads the counters.
const READING_TICK: Duration = Duration::from_millis(250);

impl ReadingLine {
    /// A line labelled `label` for reading `total_bytes` of input.
    pub fn start(quiet: bool, label: &str, total_bytes: u64) -> ReadingLine {
        let shared = Arc::new(ReadingShared {
            progress: ReadProgress::default(),
            total_bytes,
            what: Mutex::new("reading".into()),
            done: AtomicBool::new(false),
        });
        let display = (!quiet && std::io::stderr().is_terminal()).then(|| {
            let (shared, label) = (Arc::clone(&shared), label.to_string());
            std::thread::spawn(move || show_reading(&shared, &label))
        });
        ReadingLine { shared, display }
    }

    /// The counters the importers add to.
    pub fn progress(&self) -> &ReadProgress {
        &self.shared.progress
    }

    /// Another step: `what` is shown in place of "reading".
    pub fn step(&self, what: &str) {
        *self.shared.what.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = what.to_string();
    }

    /// Another reading of the same input from its start (`what`, e.g. a second pass).
    pub fn restart(&self, what: &str) {
        self.shared.progress.restart();
        self.step(what);
    }
}

/// The analysis reads through this line.
impl iolens_analyze::trace_summary::Reading for ReadingLine {
    fn progress(&self) -> &ReadProgress {
        ReadingLine::progress(self)
    }
    fn step(&self, what: &str) {
        ReadingLine::step(self, what);
    }
    fn restart(&self, what: &str) {
        ReadingLine::restart(self, what);
    }
}

impl Drop for ReadingLine {
    fn drop(&mut self) {
        self.shared.done.store(true, Ordering::Release);
        if let Some(display) = self.display.take() {
            display.thread().unpark();
            let _ = display.join();
        }
    }
}

/// The display thread of a [`ReadingLine`]: until told it is done.
fn show_reading(shared: &ReadingShared, label: &str) {
    let started = Instant::now();
    let mut line: Option<ProgressLine> = None;
    loop {
        std::thread::park_timeout(READING_TICK);
        if shared.done.load(Ordering::Acquire) {
            break;
        }
        let elapsed = started.elapsed();
        if elapsed < READING_LINE_AFTER {
            continue;
        }
        let what = shared.what.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone();
        // The elapsed time counts from the command's start, not from the line's; the ETA is in
        // the message, from the current byte rate (a second pass starts the bar over).
        let line = line.get_or_insert_with(|| {
            let fresh =
                ProgressLine::with_template(false, label, "{prefix} [{bar:30}] {elapsed_precise} {msg}");
            ProgressLine { bar: fresh.bar.clone().with_elapsed(elapsed), ..fresh }
        });
        line.reading(
            &what,
            elapsed.as_secs_f64(),
            shared.progress.bytes(),
            shared.progress.events(),
            shared.total_bytes,
        );
    }
    if let Some(line) = line {
        line.finish();
    }
}

/// Operations and bytes per second over a sliding window of about a second.
#[derive(Default)]
struct CurrentRate {
    window_start: Option<(f64, u64, u64)>,
    ops_s: Option<f64>,
    bytes_s: Option<f64>,
}

/// Shortest window a current rate is taken over: shorter ones jitter with the tick.
const RATE_WINDOW_S: f64 = 1.0;

impl CurrentRate {
    fn update(&mut self, elapsed_s: f64, ops: u64, bytes: u64) {
        match self.window_start {
            Some((t0, ops0, bytes0)) if elapsed_s >= t0 && ops >= ops0 && bytes >= bytes0 => {
                let span = elapsed_s - t0;
                if span >= RATE_WINDOW_S {
                    self.ops_s = Some((ops - ops0) as f64 / span);
                    self.bytes_s = Some((bytes - bytes0) as f64 / span);
                    self.window_start = Some((elapsed_s, ops, bytes));
                }
            }
            // First sample, or a new run behind the same line (counters restarted).
            _ => *self = CurrentRate { window_start: Some((elapsed_s, ops, bytes)), ..Default::default() },
        }
    }

    /// "reading: 42% of 1200.0 MiB, 3100000 records; now 5.20M records/s, 310.0 MiB/s, ETA 2s":
    /// the ETA at the current byte rate, once there is one.
    fn reading_message(&self, what: &str, bytes: u64, records: u64, total_bytes: u64) -> String {
        let so_far = format!(
            "{what}: {:.0}% of {} MiB, {records} records",
            share_read(bytes, total_bytes) * 100.0,
            crate::text::number::fmt_mib(total_bytes as f64)
        );
        let (Some(r), Some(b)) = (self.ops_s, self.bytes_s) else { return so_far };
        let rates = format!(
            "{so_far}; now {} records/s, {} MiB/s",
            crate::text::number::fmt_rate(r),
            crate::text::number::fmt_mib(b)
        );
        match total_bytes.checked_sub(bytes) {
            Some(left) if left > 0 && b > 0.0 => format!("{rates}, ETA {}", short_duration(left as f64 / b)),
            _ => rates,
        }
    }

    fn message(&self, ops: u64, bytes: u64) -> String {
        let total = format!("{ops} ops, {} MiB", crate::text::number::fmt_mib(bytes as f64));
        match (self.ops_s, self.bytes_s) {
            (Some(o), Some(b)) => {
                format!(
                    "{total}; now {} IOPS, {} MiB/s",
                    crate::text::number::fmt_rate(o),
                    crate::text::number::fmt_mib(b)
                )
            }
            _ => total,
        }
    }
}

impl RunObserver for ProgressLine {
    fn phase(&self, what: &str) {
        self.show(what.to_string(), None);
    }

    fn step(&self, fraction: f64, what: &str) {
        self.bar.set_position((fraction.clamp(0.0, 1.0) * 1000.0) as u64);
        self.show(what.to_string(), Some(fraction));
    }

    fn progress(&self, p: &Progress) {
        if let Some(f) = p.fraction {
            self.bar.set_position((f * 1000.0) as u64);
        }
        let mut rates = self.rates.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        rates.update(p.elapsed_s, p.ops, p.bytes);
        let message = rates.message(p.ops, p.bytes);
        drop(rates);
        // A run's fraction is its own point's, not the part's: the part goes by its plan.
        self.show(message, None);
    }
}

/// The parts of a command made of parts (quick), each with the seconds it is planned to take,
/// from which the share of the whole done and the whole's ETA follow.
#[derive(Debug, Clone)]
pub struct PartsPlan {
    pub command: &'static str,
    pub parts: Vec<(&'static str, f64)>,
    pub started: Instant,
}

impl PartsPlan {
    /// The part `name` starting now; None for a part the plan does not list.
    pub fn part(&self, name: &str) -> Option<PartOfPlan> {
        let index = self.parts.iter().position(|(n, _)| *n == name)?;
        Some(PartOfPlan {
            command: self.command,
            index,
            count: self.parts.len(),
            before_s: self.parts[..index].iter().map(|p| p.1).sum(),
            planned_s: self.parts[index].1,
            total_s: self.parts.iter().map(|p| p.1).sum(),
            whole_started: self.started,
            part_started: Instant::now(),
        })
    }
}

/// One part of a [`PartsPlan`], running.
#[derive(Debug, Clone)]
pub struct PartOfPlan {
    command: &'static str,
    index: usize,
    count: usize,
    /// Planned seconds of the parts before this one, of this one, and of all.
    before_s: f64,
    planned_s: f64,
    total_s: f64,
    whole_started: Instant,
    part_started: Instant,
}

/// A part that overruns its plan shows at most this share of itself done until it ends.
const OVERRUN_SHARE: f64 = 0.95;
/// Below this share of the whole done the ETA is the plan's; above, the pace so far's.
const PACE_KNOWN_SHARE: f64 = 0.05;

impl PartOfPlan {
    /// Share of the whole done, 0 to 1: the parts before, plus this part's share — the one it
    /// counts itself when it does (`part_fraction`), else its time against its plan.
    pub fn share_done(&self, part_elapsed_s: f64, part_fraction: Option<f64>) -> f64 {
        if self.total_s <= 0.0 {
            return 0.0;
        }
        let by_time = if self.planned_s > 0.0 { part_elapsed_s / self.planned_s } else { 0.0 };
        let within = part_fraction.unwrap_or(by_time).clamp(0.0, OVERRUN_SHARE);
        ((self.before_s + within * self.planned_s) / self.total_s).clamp(0.0, 1.0)
    }

    /// "quick 2/4, 37% done, ETA 1m20s": the ETA at the pace so far once it is known, the
    /// plan's before.
    pub fn describe(&self, whole_elapsed_s: f64, share: f64) -> String {
        let eta_s = if share >= PACE_KNOWN_SHARE {
            whole_elapsed_s * (1.0 - share) / share
        } else {
            self.total_s * (1.0 - share)
        };
        format!(
            "{} {}/{}, {:.0}% done, ETA {}",
            self.command,
            self.index + 1,
            self.count,
            share * 100.0,
            short_duration(eta_s)
        )
    }
}

/// 45s, 3m05s, 1h02m.
fn short_duration(seconds: f64) -> String {
    let s = if seconds.is_finite() { seconds.max(0.0).round() as u64 } else { 0 };
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
    }
}

/// `quick`'s parts on the terminal: a progress line per part with the whole's share done and
/// ETA, and each part's result saved as its JSON document.
pub struct PartsOnTerminal;

impl iolens_suites::quick::QuickPresenter for PartsOnTerminal {
    type Progress = ProgressLine;

    fn start_part(
        &self,
        name: &'static str,
        plan: &[(&'static str, f64)],
        started: Instant,
        quiet: bool,
    ) -> ProgressLine {
        let plan = PartsPlan { command: "quick", parts: plan.to_vec(), started };
        match plan.part(name) {
            Some(whole) => ProgressLine::for_part(quiet, name, whole),
            None => ProgressLine::new(quiet, name),
        }
    }

    fn end_part(&self, progress: ProgressLine) {
        progress.finish();
    }

    fn save<B: crate::Body>(&self, path: &std::path::Path, result: &B, job: serde_json::Value) {
        crate::publish::write_result(path, result, Some(job));
    }
}

#[cfg(test)]
mod progress_tests {
    use super::{share_read, short_duration, CurrentRate, PartsPlan, ReadingLine};

    #[test]
    fn reading_shows_the_share_of_the_input_and_the_current_rates() {
        let mut r = CurrentRate::default();
        r.update(2.0, 1000, 1 << 20);
        assert_eq!(
            r.reading_message("reading", 1 << 20, 1000, 4 << 20),
            "reading: 25% of 4.0 MiB, 1000 records"
        );
        // 3 MiB and 3000 records more in the next 1.5 s: 4 MiB left of 8 take 2 s more.
        r.update(3.5, 4000, 4 << 20);
        assert_eq!(
            r.reading_message("reading", 4 << 20, 4000, 8 << 20),
            "reading: 50% of 8.0 MiB, 4000 records; now 2000 records/s, 2.0 MiB/s, ETA 2s"
        );
        // All read: no ETA (what is left is summarizing, which the bytes do not tell).
        assert_eq!(
            r.reading_message("summarizing", 8 << 20, 8000, 8 << 20),
            "summarizing: 100% of 8.0 MiB, 8000 records; now 2000 records/s, 2.0 MiB/s"
        );
        assert_eq!(share_read(5, 0), 0.0, "an empty input");
        assert_eq!(share_read(7, 5), 1.0, "a file that grew while read");
    }

    #[test]
    fn a_reading_line_that_is_not_shown_still_counts() {
        // Quiet: no display thread, but the importers' counters work (and restart for a pass).
        let line = ReadingLine::start(true, "analyze", 100);
        assert!(line.display.is_none());
        line.restart("second pass");
        assert_eq!(line.progress().bytes(), 0);
        assert_eq!(*line.shared.what.lock().unwrap(), "second pass");
    }

    fn quick_plan() -> PartsPlan {
        PartsPlan {
            command: "quick",
            parts: vec![("sweep", 10.0), ("saturate", 20.0), ("write-modes", 10.0), ("beff-io", 60.0)],
            started: std::time::Instant::now(),
        }
    }

    #[test]
    fn the_share_of_the_whole_counts_the_parts_before_and_this_ones_progress() {
        let plan = quick_plan();
        assert!(plan.part("clean").is_none());
        let sweep = plan.part("sweep").unwrap();
        assert_eq!(sweep.share_done(0.0, None), 0.0);
        assert_eq!(sweep.share_done(5.0, None), 0.05, "half its planned 10 s of 100 s");
        let saturate = plan.part("saturate").unwrap();
        assert_eq!(saturate.share_done(10.0, None), 0.2, "sweep's 10 s and half of saturate's 20 s");
        // An overrunning part holds short of its end: the next part's start moves the line on.
        assert_eq!(saturate.share_done(100.0, None), (10.0 + 0.95 * 20.0) / 100.0);
        // A part that counts its own steps (b_eff_io's patterns) goes by them, not by time.
        let beff = plan.part("beff-io").unwrap();
        assert_eq!(beff.share_done(1.0, Some(0.5)), 0.7);
    }

    #[test]
    fn the_whole_eta_follows_the_pace_once_known_and_the_plan_before() {
        let plan = quick_plan();
        let saturate = plan.part("saturate").unwrap();
        // 20% done in 30 s: 80% more at that pace is 120 s.
        assert_eq!(saturate.describe(30.0, 0.2), "quick 2/4, 20% done, ETA 2m00s");
        let sweep = plan.part("sweep").unwrap();
        // 1% done: too early for a pace, the plan's remaining 99 s.
        assert_eq!(sweep.describe(0.1, 0.01), "quick 1/4, 1% done, ETA 1m39s");
        assert_eq!(short_duration(3725.0), "1h02m");
        assert_eq!(short_duration(f64::NAN), "0s");
    }

    #[test]
    fn current_rate_is_over_the_last_window_not_since_the_start() {
        let mut r = CurrentRate::default();
        r.update(0.0, 0, 0);
        assert_eq!(r.message(0, 0), "0 ops, 0.0 MiB");
        r.update(1.0, 1000, 1 << 20);
        assert_eq!(r.message(1000, 1 << 20), "1000 ops, 1.0 MiB; now 1000 IOPS, 1.0 MiB/s");
        // Under a second later: the rate stays what the last full window said.
        r.update(1.5, 1100, 1 << 20);
        assert_eq!(r.ops_s, Some(1000.0));
        // The device slowed down: 100 ops in the next second, not (1100 + …) / 2 s.
        r.update(2.0, 1100, 2 << 20);
        assert_eq!(r.ops_s, Some(100.0));
        assert_eq!(r.bytes_s, Some((1 << 20) as f64));
    }

    #[test]
    fn a_restarted_run_behind_the_same_line_starts_a_new_window() {
        let mut r = CurrentRate::default();
        r.update(0.0, 0, 0);
        r.update(2.0, 4000, 0);
        r.update(0.1, 10, 0);
        assert_eq!(r.ops_s, None);
        assert_eq!(r.window_start, Some((0.1, 10, 0)));
    }
}
