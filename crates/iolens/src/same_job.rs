//! The fingerprint of `run` under `mpirun`: the flags that shape the run across the ranks, then
//! the job ([`iolens_mpi::fingerprint`] says what is in it and what may differ per rank).

use iolens_mpi::fingerprint::of_job;
use iolens_mpi::wire::JobFingerprint;
use iolens_workload::Job;

use crate::cli::RunArgs;

/// `run`: the flags that shape the run across the ranks, then the job.
pub fn of_run(job: &Job, a: &RunArgs) -> JobFingerprint {
    let mut fp = JobFingerprint::default();
    fp.push("--shared-file", a.shared_file);
    if a.shared_file {
        fp.push("--layout", &a.layout);
    }
    fp.push("--reorder-ranks", a.reorder_ranks.map_or_else(|| "none".to_string(), |n| n.to_string()));
    fp.push("--repeat", a.repeat);
    fp.push("--keep-cache", a.keep_cache);
    fp.push("--drop-cache", a.drop_cache);
    fp.fields.extend(of_job(job, a.shared_file).fields);
    fp
}
