//! `mpirun -np N iolens trace -- APP`: one iolens per rank, one summary.
//!
//! No MPI is needed for it (iolens itself never calls MPI; the traced program does): the ranks
//! meet in one job directory — `--out DIR`, or a temporary directory named after the launcher's
//! job id — each tracing its program into `rank-<r>/`, leaving `rank-<r>/exit` with its
//! program's outcome when done. Rank 0 waits for every rank's `exit` (a bounded time), then
//! summarizes the whole directory (the preload's clock files put every rank on rank 0's clock);
//! the other ranks print nothing and exit with their program's status. On several nodes the
//! directory must be on a file system they share (`--out`); otherwise rank 0 sees its node's
//! ranks only and names the missing ones.
//!
//! A rank whose program fails (killed, or a non-zero status) leaves `aborted` in the job
//! directory, naming itself. Its peers' programs may wait for it in MPI calls forever, and
//! mpirun aborts the whole job the moment one iolens exits with a failure, killing rank 0
//! before it summarizes; so every rank stops its program on seeing `aborted` (SIGTERM to its
//! process group, as mpirun would), and the ranks other than 0 exit only once rank 0 left
//! `summarized` (or after [`RANK_WAIT`]).

use iolens_output::errln;
use iolens_ownership::{claim_made_dir, Claimed};
use std::fs;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long rank 0 waits, after its own program ended, for the other ranks' programs to end.
/// They end together in an MPI job (MPI_Finalize); a rank that takes longer is named.
const RANK_WAIT: Duration = Duration::from_secs(60);

/// This process's place in an MPI job.
#[derive(Debug, Clone)]
pub struct RankOfJob {
    pub rank: usize,
    pub size: usize,
    /// The launcher's job id, as a file-name-safe string: names the temporary job directory.
    job: String,
}

impl RankOfJob {
    /// From the launcher's environment; the launcher must tell both the rank and the size.
    pub fn from_launch(launch: &iolens_mpi::Launch) -> Result<RankOfJob, String> {
        let (Some(rank), Some(size)) = (launch.rank, launch.size) else {
            return Err(format!(
                "trace under an MPI launcher needs the rank and the job size; {} tells only one of them",
                launch.variable
            ));
        };
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        // SAFETY: getppid cannot fail.
        let parent = unsafe { libc::getppid() };
        // Open MPI and PMIx launchers name the job; Hydra does not, but starts every rank of a
        // node from one proxy process.
        let job = env("PMIX_NAMESPACE")
            .or_else(|| env("OMPI_MCA_ess_base_jobid"))
            .unwrap_or_else(|| format!("ppid-{parent}"));
        let job = job.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect();
        Ok(RankOfJob { rank, size, job })
    }

    /// The job directory: `out` (made if missing), or a temporary directory all ranks of this
    /// node compute alike; whether it is the temporary one (rank 0 removes it); and, for the
    /// rank that made it, its record in this process's lease (so that the directory of a job
    /// killed on every rank is found by `iolens clean`), forgotten when dropped.
    pub fn job_dir(&self, out: Option<&Path>) -> Result<(PathBuf, bool, Option<Claimed>), String> {
        if let Some(dir) = out {
            fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
            return Ok((dir.to_path_buf(), false, None));
        }
        // SAFETY: geteuid cannot fail.
        let uid = unsafe { libc::geteuid() };
        let dir = std::env::temp_dir().join(format!("iolens-trace-mpi-{}-{uid}", self.job));
        let claimed = match fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => claim_made_dir(&dir).ok(),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                // Made by another rank of this job; a predictable name in a shared directory
                // must be ours, private, and not a link planted by someone else.
                let meta = fs::symlink_metadata(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
                if !meta.is_dir() || meta.uid() != uid || meta.permissions().mode() & 0o077 != 0 {
                    return Err(format!(
                        "{} exists but is not a private directory of this user: refusing to trace into it\n  hint: give `--out DIR`",
                        dir.display()
                    ));
                }
                None
            }
            Err(e) => return Err(format!("cannot create {}: {e}", dir.display())),
        };
        Ok((dir, true, claimed))
    }

    /// This rank's stream directory inside the job directory.
    pub fn rank_dir(&self, job_dir: &Path) -> PathBuf {
        job_dir.join(format!("rank-{}", self.rank))
    }
}

/// Leaves this rank's outcome (`code N` or `signal N`) in its directory: written under a
/// temporary name and renamed, so rank 0 never reads half of it.
pub fn mark_done(rank_dir: &Path, status: &std::process::ExitStatus) {
    use std::os::unix::process::ExitStatusExt;
    let text = match (status.code(), status.signal()) {
        (Some(code), _) => format!("code {code}\n"),
        (None, Some(signal)) => format!("signal {signal}\n"),
        _ => "unknown\n".to_string(),
    };
    let temp = rank_dir.join("iolens-exit.tmp");
    let written = fs::File::create(&temp).and_then(|mut f| f.write_all(text.as_bytes()));
    if let Err(e) = written.and_then(|_| fs::rename(&temp, rank_dir.join("iolens-exit"))) {
        errln!("iolens: cannot mark rank's end in {}: {e}", rank_dir.display());
    }
}

/// Rank 0: waits until every rank left its outcome, at most [`RANK_WAIT`]; the notes on
/// ranks whose program failed or that did not end in time.
pub fn wait_for_ranks(job_dir: &Path, size: usize) -> Vec<String> {
    let outcome =
        |rank: usize| fs::read_to_string(job_dir.join(format!("rank-{rank}")).join("iolens-exit")).ok();
    let deadline = Instant::now() + RANK_WAIT;
    let mut pending: Vec<usize> = (0..size).collect();
    loop {
        pending.retain(|r| outcome(*r).is_none());
        if pending.is_empty() || Instant::now() >= deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut notes = Vec::new();
    if !pending.is_empty() {
        let shown: Vec<usize> = pending.iter().copied().take(20).collect();
        notes.push(format!(
            "MPI ranks {shown:?}{} had not ended {} s after rank 0's program: what they had not written out by then is NOT in these figures",
            if pending.len() > shown.len() { " and more" } else { "" },
            RANK_WAIT.as_secs()
        ));
    }
    let failed: Vec<String> = (0..size)
        .filter_map(|r| outcome(r).map(|o| (r, o.trim().to_string())))
        .filter(|(_, o)| o != "code 0")
        .take(20)
        .map(|(r, o)| format!("rank {r}: {o}"))
        .collect();
    if !failed.is_empty() {
        notes.push(format!("the program failed on some ranks ({})", failed.join(", ")));
    }
    notes
}

impl RankOfJob {
    /// The file a failing rank of this job leaves in the job directory (see the module's
    /// documentation); named after the job, so a reused `--out DIR` never shows an earlier
    /// job's.
    fn aborted_file(&self, job_dir: &Path) -> PathBuf {
        job_dir.join(format!("iolens-aborted-{}", self.job))
    }

    /// The file rank 0 of this job leaves once its summary is written.
    fn summarized_file(&self, job_dir: &Path) -> PathBuf {
        job_dir.join(format!("iolens-summarized-{}", self.job))
    }

    /// This rank's program failed with `status`: tells the other ranks, unless one failed
    /// first.
    pub fn mark_aborted(&self, job_dir: &Path, status: &std::process::ExitStatus) {
        use std::os::unix::process::ExitStatusExt;
        let how = match (status.code(), status.signal()) {
            (Some(code), _) => format!("exited with status {code}"),
            (None, Some(signal)) => format!("was killed by signal {signal}"),
            _ => "failed".to_string(),
        };
        let temp = job_dir.join(format!(".aborted.{}.tmp", self.rank));
        let written =
            fs::File::create(&temp).and_then(|mut f| writeln!(f, "rank {}'s program {how}", self.rank));
        // A hard link fails if the name exists: the first rank to fail is the one named.
        let _ = written.and_then(|_| fs::hard_link(&temp, self.aborted_file(job_dir)));
        let _ = fs::remove_file(&temp);
    }

    /// What the first failing rank left, if one did.
    pub fn aborted(&self, job_dir: &Path) -> Option<String> {
        fs::read_to_string(self.aborted_file(job_dir)).ok().map(|s| s.trim().to_string())
    }

    /// Rank 0: the summary is written (or cannot be); the other ranks may exit.
    pub fn mark_summarized(&self, job_dir: &Path) {
        if let Err(e) = fs::File::create(self.summarized_file(job_dir)) {
            errln!("iolens: cannot mark the summary done in {}: {e}", job_dir.display());
        }
    }

    /// A rank other than 0 of a job that aborted: waits until rank 0 wrote its summary (or
    /// removed the job directory), at most [`RANK_WAIT`].
    pub fn wait_for_summary(&self, job_dir: &Path) {
        let deadline = Instant::now() + RANK_WAIT;
        while job_dir.exists() && !self.summarized_file(job_dir).exists() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// After this rank's program ended with `status` (its streams in `rank_dir`): tells the
    /// other ranks of a failure and that this rank is done. Rank 0 then waits for every rank and
    /// gets the job's notes (ranks missing or failed, the first abort); any other rank gets
    /// `None`, after waiting for rank 0's summary when the job aborted (so that it is written
    /// before mpirun ends the job).
    pub fn after_program(
        &self,
        job_dir: &Path,
        rank_dir: &Path,
        status: &std::process::ExitStatus,
    ) -> Option<Vec<String>> {
        if !status.success() {
            self.mark_aborted(job_dir, status);
        }
        mark_done(rank_dir, status);
        if self.rank != 0 {
            if self.aborted(job_dir).is_some() {
                self.wait_for_summary(job_dir);
            }
            return None;
        }
        let mut notes = wait_for_ranks(job_dir, self.size);
        notes
            .extend(self.aborted(job_dir).map(|first| crate::ProgramNote::RankAborted { first }.to_string()));
        Some(notes)
    }

    /// Waits for the traced program (the leader of its process group), stopping it (SIGTERM,
    /// then SIGKILL after [`STOP_GRACE`]) once another rank's program failed.
    pub fn wait_stopping_on_abort(
        &self,
        child: &mut std::process::Child,
        job_dir: &Path,
    ) -> std::io::Result<std::process::ExitStatus> {
        let group = child.id() as i32;
        let aborted = self.aborted_file(job_dir);
        let mut asked_to_stop: Option<Instant> = None;
        let mut killed = false;
        loop {
            if let Some(status) = child.try_wait()? {
                return Ok(status);
            }
            match asked_to_stop {
                None if aborted.exists() => {
                    // SAFETY: signalling our own child's process group.
                    unsafe { libc::kill(-group, libc::SIGTERM) };
                    asked_to_stop = Some(Instant::now());
                }
                Some(at) if !killed && at.elapsed() >= STOP_GRACE => {
                    // SAFETY: as above.
                    unsafe { libc::kill(-group, libc::SIGKILL) };
                    killed = true;
                }
                _ => {}
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// How long a program asked to stop because another rank failed has before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(5);
