//! Running the traced program: its environment (the preload library, the stream directory),
//! its own process group with the terminal handed to it, a death signal should iolens die, and
//! what is known of it before and after (secure-execution mode, static linking, orphans left
//! running, how it ended).

use std::fmt;
use std::fs;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};
use std::time::Instant;

use iolens_ownership::ScratchDir;
use iolens_record::program::{elf_is_static, ELF_PROBE_BYTES};

/// The program to trace and where its calls go.
pub struct TracedProgram<'a> {
    /// The program and its arguments.
    pub command: &'a [String],
    /// The preload library to load into it.
    pub preload: &'a Path,
    /// The directory its event streams go to.
    pub stream_dir: &'a Path,
    /// One rank of an MPI job: the preload measures the ranks' clocks against each other.
    pub mpi_clock: bool,
}

/// How the traced program ended.
pub struct Ran {
    pub status: ExitStatus,
    /// From its start to its end, as iolens saw them.
    pub wall_ns: u64,
    /// Processes it started that outlived it (daemons), still running.
    pub left_running: Vec<u32>,
}

/// Runs the program traced until it ends: `forward(pgid)` is told its process group while it
/// runs (and 0 after) so that stopping signals reach it; `wait` waits for it (an MPI rank also
/// watches its job).
pub fn run_traced(
    program: &TracedProgram<'_>,
    forward: fn(i32),
    wait: impl FnOnce(&mut Child) -> std::io::Result<ExitStatus>,
) -> Result<Ran, String> {
    let name = &program.command[0];
    let ld_preload = match std::env::var("LD_PRELOAD") {
        Ok(existing) if !existing.is_empty() => format!("{}:{existing}", program.preload.display()),
        _ => program.preload.display().to_string(),
    };
    let started = Instant::now();
    let mut cmd = Command::new(name);
    cmd.args(&program.command[1..]).env("LD_PRELOAD", ld_preload).env("IOLENS_TRACE_DIR", program.stream_dir);
    if program.mpi_clock {
        // Every rank of the job runs under iolens: the preload may measure the clocks of all.
        cmd.env("IOLENS_MPI_CLOCK", "1");
    }
    let take_terminal = in_terminal_foreground();
    // Orphans of the program (daemons) become our children: we can tell which outlive it.
    // SAFETY: a flag on this process.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1) };
    let mut child = spawn_traced(&mut cmd, take_terminal).map_err(|e| format!("cannot run {name}: {e}"))?;
    forward(child.id() as i32);
    let waited = wait(&mut child);
    forward(0);
    if take_terminal {
        // SAFETY: getpgrp cannot fail.
        give_terminal(unsafe { libc::getpgrp() });
    }
    let status = waited.map_err(|e| format!("waiting for {name}: {e}"))?;
    let wall_ns = started.elapsed().as_nanos() as u64;
    Ok(Ran { status, wall_ns, left_running: reap_and_list_orphans() })
}

/// What a trace's summary says of the program itself.
#[derive(Debug, Clone, PartialEq)]
pub enum ProgramNote {
    /// Processes it started were still running when it exited.
    LeftRunning { program: String, pids: Vec<u32> },
    /// It runs in secure-execution mode: not traced.
    SecureExec { program: String },
    /// It is statically linked: not traced.
    Static { program: String },
    /// It exited with a non-zero status.
    Exited { program: String, code: i32 },
    /// It was killed by a signal.
    Killed { program: String },
    /// A rank of the job failed and the others' programs were stopped (its description).
    RankAborted { first: String },
}

impl fmt::Display for ProgramNote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProgramNote::LeftRunning { program, pids } => write!(
                f,
                "process(es) {pids:?}, started by {program}, were still running when it exited (daemons): what they had not written out by then is NOT in these figures"
            ),
            ProgramNote::SecureExec { program } => write!(
                f,
                "{program} runs in secure-execution mode (set-user-ID or set-group-ID to another user): the loader ignores LD_PRELOAD there, so it and what it starts are NOT traced"
            ),
            ProgramNote::Static { program } => write!(
                f,
                "{program} is statically linked: LD_PRELOAD cannot see its calls (only dynamically linked children are traced)"
            ),
            ProgramNote::Exited { program, code } => write!(f, "{program} exited with status {code}"),
            ProgramNote::Killed { program } => {
                write!(f, "{program} was killed by a signal: its last buffered events are lost")
            }
            ProgramNote::RankAborted { first } => write!(
                f,
                "{first}: the other ranks' programs were stopped (SIGTERM), as mpirun aborts such a job; what a stopped or killed program had not written out is NOT in these figures"
            ),
        }
    }
}

/// The notes of a program that ran: orphans left running, why it was not traced, how it ended.
pub fn program_notes(program: &str, ran: &Ran) -> Vec<ProgramNote> {
    let name = program.to_string();
    let mut notes = Vec::new();
    if !ran.left_running.is_empty() {
        notes.push(ProgramNote::LeftRunning { program: name.clone(), pids: ran.left_running.clone() });
    }
    if runs_in_secure_mode(program) {
        notes.push(ProgramNote::SecureExec { program: name.clone() });
    }
    if is_static_binary(program) {
        notes.push(ProgramNote::Static { program: name.clone() });
    }
    match ran.status.code() {
        Some(0) => {}
        Some(code) => notes.push(ProgramNote::Exited { program: name, code }),
        None => notes.push(ProgramNote::Killed { program: name }),
    }
    notes
}

/// The traced program's outcome is ours: a failing program fails the command the same way.
pub fn exit_like(status: &ExitStatus) -> Result<(), u8> {
    match status.code() {
        Some(0) => Ok(()),
        Some(code) => Err(code.clamp(1, 255) as u8),
        None => {
            use std::os::unix::process::ExitStatusExt;
            Err((128 + status.signal().unwrap_or(0)).clamp(1, 255) as u8)
        }
    }
}

impl StreamDir {
    /// The user's directory `out` (created, refused if it holds an earlier trace's streams),
    /// or a scratch directory of our own in the temporary directory.
    pub fn create(out: Option<&Path>) -> Result<StreamDir, (String, bool)> {
        match out {
            Some(d) => {
                fs::create_dir_all(d).map_err(|e| (format!("cannot create {}: {e}", d.display()), false))?;
                refuse_earlier_streams(d).map_err(|e| (e, true))?;
                Ok(StreamDir::Kept(d.to_path_buf()))
            }
            None => {
                let base = std::env::temp_dir();
                ScratchDir::create(&base, TRACE_DIR_PREFIX, false).map(StreamDir::Temp).map_err(|e| {
                    (format!("cannot create a trace directory in {}: {e}", base.display()), false)
                })
            }
        }
    }
}

/// `program` resolved through PATH, as the exec will find it.
fn resolve_program(program: &str) -> Option<PathBuf> {
    if program.contains('/') {
        Some(PathBuf::from(program))
    } else {
        std::env::var_os("PATH")
            .and_then(|p| std::env::split_paths(&p).map(|d| d.join(program)).find(|c| c.is_file()))
    }
}

/// Whether the loader runs `program` in secure-execution mode for us (set-user-ID to another
/// user, set-group-ID to another group), where it ignores LD_PRELOAD.
pub fn runs_in_secure_mode(program: &str) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Some(meta) = resolve_program(program).and_then(|p| fs::metadata(p).ok()) else { return false };
    // SAFETY: plain queries of our own identity.
    let (euid, egid) = unsafe { (libc::geteuid(), libc::getegid()) };
    (meta.mode() & libc::S_ISUID != 0 && meta.uid() != euid)
        || (meta.mode() & libc::S_ISGID != 0 && meta.gid() != egid)
}

/// Whether `program` (resolved through PATH) is a statically linked ELF, which LD_PRELOAD
/// cannot see into.
pub fn is_static_binary(program: &str) -> bool {
    let Some(path) = resolve_program(program) else { return false };
    // O_NONBLOCK: a FIFO named as the program must not block the open; only a regular file is
    // read, and only its first bytes.
    let Ok(file) = fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open(path) else {
        return false;
    };
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        return false;
    }
    let mut bytes = Vec::new();
    if file.take(ELF_PROBE_BYTES as u64).read_to_end(&mut bytes).is_err() {
        return false;
    }
    elf_is_static(&bytes) == Some(true)
}

/// Prefix of the stream directories `trace` makes in the temporary directory. Each is a
/// [`ScratchDir`]: random name, 0700, registered with this process as holder, so the one of a
/// killed trace is removed by the next command's leftover cleaning (`iolens clean`).
pub const TRACE_DIR_PREFIX: &str = "iolens-trace-";

/// The stream directory: the user's (`--out`, kept), or our own temporary one (removed on drop).
pub enum StreamDir {
    Kept(PathBuf),
    Temp(ScratchDir),
}

impl StreamDir {
    pub fn path(&self) -> &Path {
        match self {
            StreamDir::Kept(p) => p,
            StreamDir::Temp(t) => t.path(),
        }
    }
}

/// Reaps the program's orphans that have exited, and lists those still running (their parent
/// is now us, the subreaper).
fn reap_and_list_orphans() -> Vec<u32> {
    // SAFETY: waitpid on our own children, without blocking.
    while unsafe { libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) } > 0 {}
    let me = std::process::id();
    let Ok(entries) = fs::read_dir("/proc") else { return Vec::new() };
    let mut pids: Vec<u32> = entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            // /proc/PID/stat: "pid (comm) state ppid ..."; comm may hold spaces and parentheses.
            fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                stat.rsplit_once(')')
                    .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok())
                    == Some(me)
            })
        })
        .collect();
    pids.sort_unstable();
    pids
}

/// Refuses an `--out` directory that holds event streams already: the summary reads every
/// stream in the directory, so an earlier trace's would be added to this one's.
pub fn refuse_earlier_streams(dir: &Path) -> Result<(), String> {
    let earlier =
        iolens_import::stream_files(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?.len();
    if earlier > 0 {
        return Err(format!(
            "--out {}: holds {earlier} event stream(s) of an earlier trace, which this trace's summary would add to its own\n  hint: give a new or empty directory (the earlier trace: `iolens analyze {}`)",
            dir.display(),
            dir.display()
        ));
    }
    Ok(())
}

/// Whether iolens runs in the foreground of a terminal on stdin (so the traced program, in a
/// process group of its own, must be given the terminal to read it and to get its Ctrl-C).
fn in_terminal_foreground() -> bool {
    // SAFETY: plain queries on fd 0.
    unsafe { libc::isatty(0) == 1 && libc::tcgetpgrp(0) == libc::getpgrp() }
}

/// Makes `group` the terminal's foreground group. iolens may be in the background by then, and
/// a background tcsetpgrp raises SIGTTOU, so that is ignored meanwhile.
fn give_terminal(group: libc::pid_t) {
    // SAFETY: async-signal-safe calls only (also used between fork and exec).
    unsafe {
        let previous = libc::signal(libc::SIGTTOU, libc::SIG_IGN);
        libc::tcsetpgrp(0, group);
        libc::signal(libc::SIGTTOU, previous);
    }
}

/// The traced program: in its own process group (signals reach it and its children as one),
/// and killed by the kernel should iolens die without passing signals on (SIGKILL, a crash).
fn spawn_traced(cmd: &mut Command, take_terminal: bool) -> std::io::Result<std::process::Child> {
    // SAFETY: getpid cannot fail.
    let parent = unsafe { libc::getpid() };
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setpgid(0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // iolens may have died before the death signal was armed: it will not come then.
            if libc::getppid() != parent {
                return Err(std::io::Error::other("iolens exited"));
            }
            if take_terminal {
                give_terminal(libc::getpid());
            }
            Ok(())
        })
    };
    cmd.spawn()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_named_as_the_program_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("prog");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o700) }, 0);
        let (tx, rx) = std::sync::mpsc::channel();
        let path = fifo.to_str().unwrap().to_string();
        std::thread::spawn(move || tx.send(is_static_binary(&path)).unwrap());
        let judged = rx.recv_timeout(std::time::Duration::from_secs(20));
        if judged.is_err() {
            // Unblock the reader stuck in open() before failing.
            let _ = std::fs::OpenOptions::new().write(true).custom_flags(libc::O_NONBLOCK).open(&fifo);
        }
        assert_eq!(judged, Ok(false), "a FIFO is not judged, and not read");
    }
}
