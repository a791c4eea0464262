//! A partition's records from every rank's log, and the system's b_eff_io from its partitions:
//! shared by the thread ranks here and the MPI ranks of `iolens-mpi`.

use std::time::Duration;

use iolens_metrics::{Warning, WarningCode};
use iolens_workload::format_bytes;

use super::rank::RankPattern;
use super::results::{mb_s, pattern_record};
use super::schedule::{overran_schedule, schedule_note};
use super::{
    method_value, partition_value, share, BeffIoConfig, BeffIoResult, Method, MethodValue, MpiIoInfo,
    Partition, PatternDef, RankLog, TypeRecord, METHOD_WEIGHTS, SCHEDULE_TOLERANCE, TYPE_WEIGHTS,
};

/// A partition's record from every rank's log (rank order): a pattern's bytes are summed over
/// the ranks and its time is the slowest rank's; likewise a type's open-to-close time.
/// `elapsed_s` is the partition's time by its clock; `call_name` names each type's call.
pub fn assemble_partition(
    cfg: &BeffIoConfig,
    table: &[PatternDef],
    logs: &[RankLog],
    elapsed_s: f64,
    call_name: &dyn Fn(u8, Method) -> String,
) -> Partition {
    let n = logs.len();
    let mut patterns = Vec::new();
    for (k, (method, index, first)) in logs[0].patterns.iter().enumerate() {
        let all: Vec<RankPattern> = logs.iter().map(|l| l.patterns[k].2).collect();
        let bytes = all.iter().map(|p| p.bytes).sum();
        let ns = all.iter().map(|p| p.ns).max().unwrap_or(0);
        let def = &table[*index];
        let mut record = pattern_record(*method, def, first.calls, bytes, ns);
        record.scheduled_s = share(cfg.time, def).as_secs_f64();
        record.budget_s = first.budget_ns.map(|b| b as f64 / 1e9);
        record.sync_s = all.iter().map(|p| p.sync_ns).max().unwrap_or(0) as f64 / 1e9;
        record.note = schedule_note(&record, first.capped, cfg.time.as_secs_f64());
        patterns.push(record);
    }
    let mut types = Vec::new();
    for (k, (method, pattern_type, _)) in logs[0].types.iter().enumerate() {
        let ns = logs.iter().map(|l| l.types[k].2).max().unwrap_or(0);
        let bytes = patterns
            .iter()
            .filter(|p| p.method == *method && p.pattern_type == *pattern_type)
            .map(|p| p.bytes)
            .sum();
        let time_s = ns as f64 / 1e9;
        types.push(TypeRecord {
            method: *method,
            pattern_type: *pattern_type,
            call: call_name(*pattern_type, *method),
            bytes,
            time_s,
            bw_mb_s: mb_s(bytes, time_s),
        });
    }
    let methods: Vec<MethodValue> = METHOD_WEIGHTS
        .iter()
        .map(|(method, weight)| {
            let of_method: Vec<TypeRecord> = types.iter().filter(|t| t.method == *method).cloned().collect();
            MethodValue {
                method: *method,
                weight: *weight,
                bw_mb_s: method_value(&of_method),
                bytes: of_method.iter().map(|t| t.bytes).sum(),
            }
        })
        .collect();
    let t = cfg.time.as_secs_f64();
    let overran = overran_schedule(elapsed_s, t);
    let schedule_held = !overran && elapsed_s >= (1.0 - SCHEDULE_TOLERANCE) * t;
    let schedule_note = (!schedule_held).then(|| {
        let noted = patterns.iter().filter(|p| p.note.is_some()).count();
        if overran {
            format!(
                "ran {elapsed_s:.2} s for T = {t:.2} s: {noted} pattern(s) took longer than the schedule left them \
                 (each runs at least one call, and types 3 and 4 move what types 0–2 moved); \
                 a smaller --mpart or a longer --time holds T"
            )
        } else {
            format!(
                "ran {elapsed_s:.2} s for T = {t:.2} s: {noted} pattern(s) finished early (rewrite and read stop at \
                 the calls the write made, so they only touch written data)"
            )
        }
    });
    Partition {
        ranks: n,
        b_eff_io: partition_value(&methods),
        methods,
        types,
        patterns,
        segment_bytes: logs.first().map_or(0, |l| l.segment),
        scheduled_s: t,
        elapsed_s,
        schedule_held,
        schedule_note,
    }
}

/// The system's b_eff_io from its partitions (the best one), with the warnings the paper's rules
/// call for. `ranks_are` says what a rank was; `mpi` describes an MPI-IO run.
pub fn system_result(
    cfg: &BeffIoConfig,
    partitions: Vec<Partition>,
    interrupted: bool,
    ranks_are: &'static str,
    mpi: Option<MpiIoInfo>,
) -> BeffIoResult {
    let mut warnings = Vec::new();
    if cfg.time < Duration::from_secs(15 * 60) {
        warnings.push(Warning::new(
            WarningCode::ShortRun,
            format!(
                "T = {:.0} s is shorter than the paper's 15 minutes: the value is not comparable to published b_eff_io figures",
                cfg.time.as_secs_f64()
            ),
        ));
    }
    let best = partitions.iter().max_by(|a, b| a.b_eff_io.total_cmp(&b.b_eff_io));
    let (b_eff_io, best_ranks) = best.map_or((0.0, 0), |p| (p.b_eff_io, p.ranks));
    for p in partitions.iter().filter(|p| overran_schedule(p.elapsed_s, p.scheduled_s)) {
        if let Some(note) = &p.schedule_note {
            warnings.push(Warning::new(WarningCode::ScheduleOverrun, format!("{} ranks: {note}", p.ranks)));
        }
    }
    for p in &partitions {
        let least = p.methods.iter().map(|m| m.bytes).min().unwrap_or(0);
        if least < 20 * cfg.cache {
            warnings.push(Warning::new(
                WarningCode::BelowCacheRule,
                format!(
                    "{} ranks: as little as {} per access method, below the paper's rule of 20 × the file-system cache ({}): caching inflates the value",
                    p.ranks,
                    format_bytes(least),
                    format_bytes(20 * cfg.cache)
                ),
            ));
        }
    }
    BeffIoResult {
        suite: "beff-io",
        dir: cfg.dir.display().to_string(),
        b_eff_io,
        best_ranks,
        time_s: cfg.time.as_secs_f64(),
        mpart: cfg.mpart,
        memory: cfg.memory,
        method_weights: METHOD_WEIGHTS.to_vec(),
        type_weights: TYPE_WEIGHTS.to_vec(),
        coffee_cup_s: if b_eff_io > 0.0 { cfg.memory as f64 / (b_eff_io * 1e6) } else { f64::INFINITY },
        partitions,
        warnings,
        interrupted,
        ranks_are,
        mpi,
    }
}
