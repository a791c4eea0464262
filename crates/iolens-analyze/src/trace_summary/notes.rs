//! What a trace summary says beside its figures: every call the figures leave out or cannot
//! see, and why. One variant per finding, so that callers and tests can match on them; the text
//! (what the terminal and the JSON `notes` show) is their `Display`.

use std::collections::BTreeSet;
use std::fmt;

/// Why a process ran a program whose calls the preload cannot see.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Untraced {
    /// Secure-execution mode: the loader ignores `LD_PRELOAD`.
    SecureExec,
    /// Statically linked: no loader.
    Static,
    /// A Go program: loaded with the preload, but its system calls bypass libc.
    Go,
}

/// One finding of a trace summary.
#[derive(Debug, Clone, PartialEq)]
pub enum TraceNote {
    /// `--only-exe`: the executables counted and those left out (each "exe (pids …, N data
    /// calls)"); nothing counted when `counted` is empty.
    OnlyExe { only_exe: Vec<String>, counted: Vec<String>, left_out: Vec<String> },
    /// Processes whose io_uring requests bypassed libc, and the files registered to their rings.
    IoUring { pids: BTreeSet<u32>, registered_files: Vec<String> },
    /// A process ran a program the preload does not reach.
    Untraced { pid: u32, program: String, why: Untraced },
    /// Processes that left no end marker (killed, or still running).
    Unended { pids: Vec<u32> },
    /// POSIX aio requests never collected by `aio_return`.
    AioUncollected { pid: u32, requests: u64, asked: u64 },
    /// Linux native AIO requests no hook saw reaped.
    NativeAioUnreaped { pid: u32, requests: u64, asked: u64 },
    /// Clones (FICLONE, FICLONERANGE): counted as read and written though no data moved.
    Clones { calls: u64, bytes: u64, failed: u64 },
    /// Path filters applied to DXT segments, not to a Darshan log's module counters.
    DarshanFilter,
    /// Events the tracer dropped, with the trace directory's errno when that was why.
    Dropped { events: u64, errno: Option<i32> },
    /// Calls on descriptors that are not files, left out: (calls, bytes, what they were on).
    NotFiles { excluded: Vec<(u64, u64, &'static str)> },
    /// stdio macros inlined into the program: refills and full-buffer flushes of its streams.
    InlinedStdio { refills: u64, refilled: u64, flushes: u64, flushed: u64 },
    /// Calls of signal handlers made while the tracer recorded the call they interrupted.
    InterruptedRecording { calls: u64, bytes: u64 },
    /// Malformed lines of a text trace, and the first of them (line, message).
    Malformed { count: u64, first: Option<(u64, String)> },
    /// A finding of the importer, in its own words.
    Import(String),
}

impl fmt::Display for TraceNote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TraceNote::OnlyExe { only_exe, counted, left_out } if counted.is_empty() => write!(
                f,
                "--only-exe {}: no traced process ran it, nothing is counted (executables seen: {})",
                only_exe.join(", "),
                left_out.join("; ")
            ),
            TraceNote::OnlyExe { only_exe, counted, left_out } => write!(
                f,
                "--only-exe {}: the figures count {}; wall time is theirs (first start to last end); left out: {}",
                only_exe.join(", "),
                counted.join("; "),
                if left_out.is_empty() { "nothing".into() } else { left_out.join("; ") }
            ),
            TraceNote::IoUring { pids, registered_files } => {
                let registered = if registered_files.is_empty() {
                    String::new()
                } else {
                    format!(" (files registered to their rings: {})", registered_files.join(", "))
                };
                write!(
                    f,
                    "process(es) {pids:?} used io_uring{registered}: their io_uring requests bypass libc and are NOT in these figures"
                )
            }
            TraceNote::Untraced { pid, program, why: Untraced::SecureExec } => write!(
                f,
                "process {pid} ran {program} in secure-execution mode (set-user-ID or set-group-ID to another user, or file capabilities): the loader ignores LD_PRELOAD there, so it and what it starts are NOT traced"
            ),
            TraceNote::Untraced { pid, program, why: Untraced::Static } => write!(
                f,
                "process {pid} ran {program}, which is statically linked: LD_PRELOAD does not reach it, so its calls are NOT traced (dynamically linked programs it starts are)"
            ),
            TraceNote::Untraced { pid, program, why: Untraced::Go } => write!(
                f,
                "process {pid} ran {program}, a Go program: Go makes its system calls itself, past libc and every hook, so its file I/O is NOT traced (only what its C code calls through libc is), and it exits without the tracer's end marker"
            ),
            TraceNote::Unended { pids } => write!(
                f,
                "process(es) {pids:?} left no end marker in their streams: killed by a signal, or still running when the trace was read; the events their threads still had buffered are NOT in these figures"
            ),
            TraceNote::AioUncollected { pid, requests, asked } => write!(
                f,
                "process {pid} submitted {requests} POSIX aio request(s) ({asked} bytes asked) never collected by aio_return: what they moved is NOT in these figures"
            ),
            TraceNote::NativeAioUnreaped { pid, requests, asked } => write!(
                f,
                "process {pid} submitted {requests} requests ({asked} bytes) through Linux native AIO (io_submit, libaio) that no hook saw reaped (taken from the completion ring in user space, or never reaped): they are NOT in these figures"
            ),
            TraceNote::Clones { calls, bytes, failed } => {
                let plural = if *calls == 1 { "" } else { "s" };
                write!(f, "{calls} clone{plural} (ioctl FICLONE or FICLONERANGE, which cp tries before copying): ")?;
                if calls > failed {
                    write!(
                        f,
                        "{:.1} MiB shared by the file system from source to destination are counted as read and written, as the program asked, though no data moved",
                        *bytes as f64 / (1 << 20) as f64
                    )?;
                }
                if *failed > 0 {
                    let sep = if calls > failed { "; " } else { "" };
                    write!(
                        f,
                        "{sep}{failed} failed (the file system cannot clone these files; cp then copies): counted among the failed calls, with 0 bytes"
                    )?;
                }
                Ok(())
            }
            TraceNote::DarshanFilter => f.write_str(
                "the path filters apply to the DXT segments and to the tables below; the module counter totals of the log above are of every file",
            ),
            TraceNote::Dropped { events, errno } => {
                let why = match errno {
                    Some(errno) => format!(
                        "the trace directory could not take them: {}",
                        std::io::Error::from_raw_os_error(*errno)
                    ),
                    None => "its buffers or the trace directory could not take them".into(),
                };
                write!(f, "{events} events were DROPPED by the tracer ({why}): totals are too low")
            }
            TraceNote::NotFiles { excluded } => {
                let parts: Vec<String> = excluded
                    .iter()
                    .map(|(calls, bytes, what)| format!("{calls} calls ({bytes} bytes) on {what}"))
                    .collect();
                write!(
                    f,
                    "reads and writes on descriptors that are not files are left out, as Darshan does: {}",
                    parts.join("; ")
                )
            }
            TraceNote::InlinedStdio { refills, refilled, flushes, flushed } => write!(
                f,
                "stdio character macros the compiler inlined into the program (getc_unlocked, putc_unlocked, fread_unlocked of a constant size) make no call per character: their reads and writes are NOT in these figures. The file streams they used were refilled {refills} times with {refilled} bytes, and flushed {flushes} times when full with {flushed} bytes (a stream's last, partial buffer leaves at fclose or fflush, uncounted here)"
            ),
            TraceNote::InterruptedRecording { calls, bytes } => write!(
                f,
                "{calls} calls ({bytes} bytes read or written) were made by signal handlers while the tracer was recording the call they interrupted: they are NOT in these figures (the calls handlers make while the program's own calls are under way are)"
            ),
            TraceNote::Malformed { count, first } => {
                write!(f, "{count} malformed lines skipped")?;
                if let Some((line, message)) = first {
                    write!(f, " (first at line {line}: {message})")?;
                }
                Ok(())
            }
            TraceNote::Import(text) => f.write_str(text),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clone_note_tells_shared_and_failed_clones_apart() {
        let both = TraceNote::Clones { calls: 3, bytes: 3 << 20, failed: 1 }.to_string();
        assert!(both.starts_with("3 clones (ioctl FICLONE"), "{both}");
        assert!(both.contains("3.0 MiB shared") && both.contains("; 1 failed"), "{both}");
        let failed_only = TraceNote::Clones { calls: 1, bytes: 0, failed: 1 }.to_string();
        assert!(failed_only.starts_with("1 clone (") && !failed_only.contains("MiB"), "{failed_only}");
    }

    #[test]
    fn an_only_exe_note_that_counted_nothing_says_so() {
        let none = TraceNote::OnlyExe {
            only_exe: vec!["gzip".into()],
            counted: vec![],
            left_out: vec!["/bin/sh (pids {1}, 0 data calls)".into()],
        };
        assert!(none.to_string().contains("no traced process ran it"), "{none}");
    }
}
