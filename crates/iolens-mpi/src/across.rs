//! One job run by every rank at once as one measurement, and a suite's points run that way.
//!
//! Order of the collective steps of one job ([`run_across`]), the same on every rank: clock
//! ping-pong, the run (its phases separated by MPI barriers), clock ping-pong again, every
//! rank's report to rank 0, every rank's busy periods to rank 0 in chunks. Rank 0 combines them
//! into the one result. An error on any rank before the results are combined ends the whole job
//! (`MPI_Abort`, [`Rank::fatal`]), naming the rank and its host. In a suite ([`suite`],
//! [`MpiRunner`]), rank 0 also sends each point's combined figures to every rank, so all ranks
//! take the same next step. Before any of it, the ranks compare what they were given
//! ([`Rank::same_job`]): ranks given another job than rank 0 end the launch on every rank,
//! naming them.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use iolens_engine::{run_job_detailed, PhaseBarrier, RunObserver, RunOptions};
use iolens_output::console::{text_to_stderr, EXIT_FAILED, EXIT_USAGE};
use iolens_output::errln;
use iolens_ownership::ScratchDir;
use iolens_record::busy::read_period_log;
use iolens_record::Interval;
use iolens_report::publish::{document_value, report_error};
use iolens_suites::{PointFigures, PointRunner, RankShare, SuiteError};
use iolens_workload::{Job, OpMix};

use crate::clock::ClockCorrection;
use crate::combine::{combine, Gathered, MpiRunResult};
use crate::wire::{JobFingerprint, RankReport, RawTotals};
use crate::world::World;

/// `path` with `.rN` before its extension: each rank's own trace or busy log.
pub fn rank_path(path: &Path, rank: usize) -> PathBuf {
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let name = match path.extension() {
        Some(ext) => format!("{stem}.r{rank}.{}", ext.to_string_lossy()),
        None => format!("{stem}.r{rank}"),
    };
    path.with_file_name(name)
}

/// This process as one rank of the job: the world, and where rank 0 writes the JSON error.
pub struct Rank<'a> {
    pub world: &'a World,
    pub json: Option<&'a Path>,
}

impl Rank<'_> {
    /// Collective, before anything runs: refuses on every rank a launch whose ranks were given
    /// different jobs (an MPMD launch of two job files, rank-dependent flags). Rank 0 reports
    /// it (and writes the JSON error); every rank ends with the usage exit code, no abort needed.
    pub fn same_job(&self, mine: &JobFingerprint) -> Result<(), u8> {
        let Err(message) = self.world.same_job(mine) else { return Ok(()) };
        if self.world.rank() == 0 {
            return Err(report_error(self.json, &message, false, EXIT_USAGE));
        }
        Err(EXIT_USAGE)
    }

    /// Reports an error of this rank and ends every rank of the job. Rank 0 also writes the
    /// error as the JSON result when one was asked for; alone, nothing needs aborting.
    pub fn fatal(&self, message: &str, interrupted: bool, code: u8) -> u8 {
        let w = self.world;
        let message = format!("rank {} on {}: {message}", w.rank(), w.host());
        if w.rank() == 0 {
            report_error(self.json, &message, interrupted, code);
        } else {
            errln!("iolens: error: {message}");
        }
        if w.size() > 1 {
            errln!("iolens: rank {} on {} stops all {} ranks (MPI_Abort)", w.rank(), w.host(), w.size());
            w.abort(code as i32);
        }
        code
    }
}

/// `--reorder-ranks N` as the placement's shift, refused where it would mean nothing.
pub fn check_reorder(job: &Job, reorder: Option<usize>, ranks: usize) -> Result<usize, String> {
    let Some(n) = reorder else { return Ok(0) };
    if n % ranks == 0 {
        return Err(format!(
            "--reorder-ranks {n} is a multiple of the {ranks} ranks: every rank would read its own data; give \
             a shift that is not (1 reads the next rank's data)"
        ));
    }
    if !job.agents.iter().any(|a| a.op == OpMix::Read) {
        return Err(format!(
            "--reorder-ranks {n}: no agent only reads, and only reading agents move to another rank's data; \
             write the data first (with --keep), then read it with --reorder-ranks"
        ));
    }
    Ok(n)
}

/// The table of a combined run and the line describing the ranks.
pub fn render_combined(combined: &MpiRunResult) -> String {
    let mut text = iolens_report::render_run(&combined.run);
    text.push_str(&format!(
        "ranks: {} on {} host(s) ({}); layout {}{}; clock offsets within ±{:.1} µs; {}\n",
        combined.ranks,
        combined.hosts.len(),
        combined.hosts.join(", "),
        combined.layout,
        match combined.reorder_ranks {
            0 => String::new(),
            n => format!("; readers read rank+{n}'s data"),
        },
        combined.clock_uncertainty_ns as f64 / 1e3,
        combined.mpi_library
    ));
    if combined.per_node.len() > 1 {
        use iolens_report::text::number::{fmt_mib, fmt_rate};
        use iolens_report::text::table::Table;
        text.push_str("per node (rates over the job's window; busy: the union of the node's ranks):\n");
        let mut t = Table::new(vec!["host", "ranks", "ops", "IOPS", "MiB/s", "busy_s", "BPS", "device"]);
        t.left_aligned = vec![1, 7];
        for n in &combined.per_node {
            let ranks: Vec<String> = n.ranks.iter().map(usize::to_string).collect();
            t.rows.push(vec![
                n.host.clone(),
                ranks.join(","),
                n.ops.to_string(),
                fmt_rate(n.iops),
                fmt_mib(n.bw_bytes_s),
                format!("{:.3}", n.busy_s),
                fmt_rate(n.bps),
                n.device.clone().unwrap_or_else(|| "-".into()),
            ]);
        }
        t.fit_last_column(iolens_report::text::run::TERMINAL_COLUMNS);
        t.render(&mut text);
    }
    text
}

/// What one rank has after [`run_across`].
pub struct RankOutcome {
    /// Rank 0: the combined result of all ranks; the others `None`.
    pub combined: Option<MpiRunResult>,
    /// This rank's own error during the measured phase.
    pub own_error: Option<String>,
}

/// One job run by every rank at once as one measurement. Collective: every rank calls it with
/// the same job, `opts.busy_log` set to a file of its own. An error of this rank before the
/// results are combined comes back as (message, interrupted): the caller ends every rank.
pub fn run_across(
    world: &World,
    job: &Job,
    opts: &RunOptions,
    observer: &dyn RunObserver,
    layout: String,
    reorder_ranks: usize,
) -> Result<RankOutcome, (String, bool)> {
    let rank = world.rank();
    let busy_log = opts.busy_log.clone().expect("every rank logs its busy periods");
    let before = world.clock_offsets();
    let detail = run_job_detailed(job, opts, observer, world)
        .map_err(|e| (e.to_string(), opts.stop.load(Ordering::SeqCst)))?;
    let after = world.clock_offsets();

    let own_error = detail.result.error.clone();
    let report = RankReport {
        rank,
        host: world.host().to_string(),
        boot: iolens_ownership::boot_id().unwrap_or_default(),
        raw: RawTotals::from_raw(&detail.total),
        files: detail.files.iter().map(|p| p.display().to_string()).collect(),
        result: document_value(&detail.result),
    };
    let reports = world.gather_reports(&report).map_err(|e| (e, false))?;
    let periods: Box<dyn Iterator<Item = Interval>> = match read_period_log(&busy_log) {
        Ok(p) => Box::new(p),
        Err(e) => {
            // Still take part in the merge (with nothing), or every rank would wait forever.
            errln!("iolens: warning: rank {rank}: cannot read its busy periods {}: {e}", busy_log.display());
            Box::new(std::iter::empty())
        }
    };
    let clocks: Vec<ClockCorrection> = before
        .iter()
        .zip(&after)
        .enumerate()
        .map(|(r, (b, a))| if r == 0 { ClockCorrection::identity() } else { ClockCorrection::new(*b, *a) })
        .collect();
    let corrections: Vec<Box<dyn Fn(u64) -> u64 + '_>> =
        clocks.iter().map(|c| Box::new(move |t| c.to_root(t)) as Box<dyn Fn(u64) -> u64>).collect();
    let refs: Vec<&dyn Fn(u64) -> u64> = corrections.iter().map(|f| f.as_ref()).collect();
    let node_of = reports.as_deref().map(crate::combine::nodes_of_ranks).unwrap_or_default();
    let union = world.busy_union(periods, &refs, &node_of);

    let (Some(reports), Some((union, node_unions))) = (reports, union) else {
        return Ok(RankOutcome { combined: None, own_error });
    };
    let combined = combine(Gathered {
        base: detail.result,
        reports: &reports,
        clocks: &clocks,
        union,
        node_unions,
        block_unit: job.block_unit,
        layout,
        mpi_library: world.library(),
        reorder_ranks,
    })
    .map_err(|e| (e, false))?;
    Ok(RankOutcome { combined: Some(combined), own_error })
}

/// A suite's figures of one point from the combined result: the aggregate, and each rank's part.
fn point_figures(combined: &MpiRunResult) -> PointFigures {
    let mut f = PointFigures::of(&combined.run);
    f.per_rank = combined
        .per_rank
        .iter()
        .map(|r| RankShare {
            rank: r.rank,
            host: r.host.clone(),
            files: r.files.clone(),
            ops: r.figures.ops,
            bytes: r.figures.bytes,
            iops: r.figures.iops,
            bw_bytes_s: r.figures.bw_bytes_s,
            busy_s: r.figures.busy_s,
        })
        .collect();
    f
}

/// Runs a suite's points across all ranks: each point is one [`run_across`], its figures sent
/// from rank 0 to every rank. The suite gives every rank its own files (file per process).
pub struct MpiRunner<'a> {
    me: &'a Rank<'a>,
    hosts: Vec<String>,
    /// Where this rank's busy-period log of each point goes.
    scratch: ScratchDir,
}

impl MpiRunner<'_> {
    /// An error of this rank alone: every rank ends (after rank 0 wrote the JSON error).
    fn end_all(&self, message: &str, interrupted: bool) -> SuiteError {
        if self.me.world.size() > 1 {
            self.me.fatal(message, interrupted, EXIT_FAILED);
        }
        SuiteError::Config(message.to_string())
    }
}

impl PointRunner for MpiRunner<'_> {
    fn run(
        &self,
        job: &Job,
        opts: &RunOptions,
        observer: &dyn RunObserver,
    ) -> Result<PointFigures, SuiteError> {
        let world = self.me.world;
        let opts = RunOptions {
            busy_log: Some(self.scratch.path().join("iolens-busy")),
            // The suite's targets already carry the rank.
            placement: None,
            ..opts.clone()
        };
        let outcome = run_across(world, job, &opts, observer, "file-per-process".into(), 0)
            .map_err(|(message, interrupted)| self.end_all(&message, interrupted))?;
        let mut bytes = match &outcome.combined {
            Some(c) => serde_json::to_vec(&point_figures(c)).expect("figures serialize"),
            None => Vec::new(),
        };
        world.broadcast_bytes(&mut bytes);
        serde_json::from_slice(&bytes)
            .map_err(|e| self.end_all(&format!("rank 0's figures of the point are unreadable: {e}"), false))
    }
    fn rank(&self) -> usize {
        self.me.world.rank()
    }
    fn ranks(&self) -> usize {
        self.me.world.size()
    }
    fn hosts(&self) -> Vec<String> {
        self.hosts.clone()
    }
    fn share(&self, values: &mut [u64]) {
        PhaseBarrier::share(self.me.world, values);
    }
    fn any_stopped(&self, here: bool) -> bool {
        self.me.world.any(here)
    }
    fn failed_alone(&self, message: String) -> SuiteError {
        self.end_all(&message, false)
    }
    fn beff_io(
        &self,
        cfg: &iolens_suites::beff_io::BeffIoConfig,
        stop: &AtomicBool,
        observer: &dyn iolens_engine::RunObserver,
    ) -> Result<Option<iolens_suites::beff_io::BeffIoResult>, SuiteError> {
        let fatal = |message: &str| -> std::convert::Infallible {
            let code = self.me.fatal(message, stop.load(Ordering::SeqCst), EXIT_FAILED);
            // Alone, nothing else waits for this process: it just ends.
            std::process::exit(code.into())
        };
        let on_step = |s: &iolens_suites::beff_io::BeffIoStep| s.show(observer);
        Ok(crate::beff_io_mpi::run(self.me.world, cfg, &[], stop, &fatal, &on_step))
    }
}

/// `mpirun -np N iolens SUITE …`: the suite runs on every rank, each point across all ranks
/// (`body` gets the runner). Only rank 0 prints and writes results (`json`: its error report).
pub fn suite(
    json: Option<&Path>,
    fingerprint: &JobFingerprint,
    body: impl FnOnce(&dyn PointRunner) -> Result<(), u8>,
) -> Result<(), u8> {
    let world = World::init().map_err(|e| report_error(json, &format!("MPI: {e}"), false, EXIT_FAILED))?;
    if world.rank() != 0 {
        text_to_stderr();
    }
    let me = Rank { world: &world, json };
    me.same_job(fingerprint)?;
    let hosts = world.hosts().map_err(|e| me.fatal(&e, false, EXIT_FAILED))?;
    let scratch = ScratchDir::create(&std::env::temp_dir(), "iolens-mpi-", false).map_err(|e| {
        me.fatal(&format!("cannot create a directory for the busy-period log: {e}"), false, EXIT_FAILED)
    })?;
    let runner = MpiRunner { me: &me, hosts, scratch };
    body(&runner)
}
