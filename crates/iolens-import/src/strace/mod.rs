//! `strace -f -ttt -T` output (also without `-f`; `-y` paths are used when present).
//!
//! Each process's descriptor table is rebuilt from open/openat/creat/dup/close results, so reads
//! and writes get their file and (for read/write without an explicit offset) their position;
//! `clone` with `CLONE_THREAD` makes a thread sharing the table, other clones and forks copy it.
//! Calls on descriptors that are not known files (pipes, sockets, the terminal) are not events.
//!
//! `parse` takes lines and arguments apart, `calls` turns each call into events and descriptor
//! table changes; this module joins cut lines and keeps the per-process state.

mod calls;
mod parse;

use std::collections::HashMap;
use std::io::Read;

use iolens_record::event::UNKNOWN_OFFSET;

use crate::{for_each_line, seconds_to_ns, Ctx, ImportError};
use calls::handle;
use parse::{closing_paren, number, parse_prefix, split_args, strace_message, Prefix};

/// Whether a line looks like strace output (for format detection).
pub(crate) fn looks_like(line: &str) -> bool {
    parse_prefix(line).is_some_and(|(_, _, rest)| rest.contains('(') || rest.starts_with("<..."))
}

#[derive(Clone, Copy)]
struct Fd {
    file: u32,
    offset: u64,
}

#[derive(Default)]
struct State {
    /// Descriptor tables by process id.
    tables: HashMap<u32, HashMap<i32, Fd>>,
    /// Process of each thread id.
    process: HashMap<u32, u32>,
    /// Calls waiting for their `resumed` half, by thread.
    unfinished: HashMap<u32, (u64, String)>,
    /// Ids of -y paths already defined.
    paths: HashMap<String, u32>,
    /// Clones that succeeded without strace showing their length (to the source's end).
    clones_unshown: u64,
    /// The start of a call's line that one of strace's messages cut, waiting for the rest.
    spliced: Option<String>,
    /// Processes strace said it attached to: started while traced, so none is the first.
    attached: std::collections::HashSet<u32>,
    /// The pid the first process turned out to have (its lines had none before): its calls
    /// stay under 0, where its first ones went.
    first_pid: Option<u32>,
    /// Read and write requests the kernel took through native AIO (`io_submit`), and their
    /// bytes: strace shows their completions without tying them to these.
    native_aio: (u64, u64),
    /// Processes that entered io_uring, whose requests strace's lines do not show.
    io_uring_pids: std::collections::BTreeSet<u32>,
    /// Processes traced and not yet exited (the first as 0), to tell whose a line without a pid
    /// is once others have been traced.
    live: std::collections::BTreeSet<u32>,
}

impl State {
    /// The thread a line is of: its pid, the first process's as 0; without one, the only
    /// process left, else the first.
    fn thread_of(&mut self, prefix: Prefix) -> u32 {
        let tid = match prefix {
            Prefix::Pid(pid) => return pid,
            Prefix::None => match self.live.len() {
                1 => *self.live.first().expect("one"),
                _ => 0,
            },
            Prefix::Bracketed(pid) if self.first_pid == Some(pid) => 0,
            Prefix::Bracketed(pid) => {
                if self.first_pid.is_none() && self.live.contains(&0) && !self.attached.contains(&pid) {
                    self.first_pid = Some(pid);
                    0
                } else {
                    pid
                }
            }
        };
        self.live.insert(tid);
        tid
    }

    /// Moves `fd`'s position in `pid` on by `moved` bytes, when it is known.
    fn advance(&mut self, pid: u32, fd: i32, moved: u64) {
        if let Some(e) = self.tables.get_mut(&pid).and_then(|t| t.get_mut(&fd)) {
            if e.offset != UNKNOWN_OFFSET {
                // Saturating at UNKNOWN_OFFSET: a position past 2^64 is not known either.
                e.offset = e.offset.saturating_add(moved);
            }
        }
    }

    fn process_of(&self, tid: u32) -> u32 {
        self.process.get(&tid).copied().unwrap_or(tid)
    }

    fn path_id(&mut self, ctx: &mut Ctx, path: &str) -> u32 {
        if let Some(&id) = self.paths.get(path) {
            return id;
        }
        let id = ctx.new_path(path);
        self.paths.insert(path.to_string(), id);
        id
    }

    /// The file behind `fd` of `pid`, learning it from a -y annotation when needed.
    fn lookup(&mut self, ctx: &mut Ctx, pid: u32, fd: i32, y_path: Option<&str>) -> Option<Fd> {
        if let Some(f) = self.tables.get(&pid).and_then(|t| t.get(&fd)) {
            return Some(*f);
        }
        let path = y_path.filter(|p| p.starts_with('/'))?;
        let id = self.path_id(ctx, path);
        let entry = Fd { file: id, offset: UNKNOWN_OFFSET };
        self.tables.entry(pid).or_default().insert(fd, entry);
        Some(entry)
    }
}

struct Call<'a> {
    tid: u32,
    start_ns: u64,
    dur_ns: u64,
    name: &'a str,
    args: Vec<&'a str>,
    ret: Option<i64>,
    /// The file a descriptor returned names, with -y: absolute, where the argument may not be.
    ret_path: Option<&'a str>,
    errno: Option<&'a str>,
}

pub(crate) fn import(ctx: &mut Ctx, input: impl Read) -> Result<(), ImportError> {
    let mut st = State::default();
    for_each_line(ctx, input, |ctx, line_no, line| {
        if let Some((head, attached)) = strace_message(line) {
            st.attached.extend(attached);
            if head.trim().is_empty() {
                // A message of its own: a call it cut (if any) still waits for its rest.
                return Ok(());
            }
            if st.spliced.take().is_some() {
                // A call's line is cut once: one cut again is not strace's (and joining heads
                // without end would grow without bound).
                return ctx.malformed(line_no, "a call's line cut twice by strace's messages");
            }
            st.spliced = Some(head.to_string());
            return Ok(());
        }
        let joined;
        let line = match st.spliced.take() {
            Some(head) => {
                joined = format!("{head}{}", line.trim_start());
                joined.as_str()
            }
            None => line,
        };
        let t = line.trim_start();
        if t.is_empty() || t.starts_with("---") || t.starts_with("+++") {
            return Ok(()); // signals and exits, when printed without a prefix
        }
        let Some((prefix, ts, rest)) = parse_prefix(line) else {
            return ctx.malformed(line_no, "expected [pid] seconds.micros syscall(...)");
        };
        let tid = st.thread_of(prefix);
        if rest.starts_with("+++") {
            let pid = st.process_of(tid);
            st.live.remove(&pid);
            return Ok(());
        }
        if rest.starts_with("---") {
            return Ok(());
        }
        let owned;
        let (start, text) = if let Some(resumed) = rest.strip_prefix("<... ") {
            let Some((_, after)) = resumed.split_once(" resumed>") else {
                return ctx.malformed(line_no, "unreadable <... resumed> line");
            };
            let Some((start, head)) = st.unfinished.remove(&tid) else {
                return Ok(()); // its first half came before the trace started
            };
            owned = format!("{head}{after}");
            (start, owned.as_str())
        } else if let Some(head) = rest.strip_suffix("<unfinished ...>") {
            st.unfinished.insert(tid, (ts, head.trim_end().to_string()));
            return Ok(());
        } else {
            (ts, rest)
        };
        let Some(open) = text.find('(') else {
            return ctx.malformed(line_no, "no system call on this line");
        };
        let Some(close) = closing_paren(text, open) else {
            return ctx.malformed(line_no, "unbalanced argument list");
        };
        let tail = &text[close + 1..];
        let Some((_, result)) = tail.split_once(" = ") else {
            return ctx.malformed(line_no, "no result");
        };
        let mut words = result.split_whitespace();
        // With -y a descriptor returned names its file: `3</d/a>`.
        let ret_text = words.next().unwrap_or("?");
        let (ret_text, ret_path) = match ret_text.split_once('<') {
            Some((fd, path)) => (fd, Some(path.trim_end_matches('>'))),
            None => (ret_text, None),
        };
        let ret = number(ret_text).map(|v| v as i64).or_else(|| ret_text.parse::<i64>().ok());
        let errno = words.next().filter(|w| w.starts_with('E'));
        let dur_ns =
            result.rsplit_once('<').and_then(|(_, d)| seconds_to_ns(d.trim_end_matches('>'))).unwrap_or(0);
        let call = Call {
            tid,
            start_ns: start,
            dur_ns,
            name: text[..open].trim(),
            args: split_args(&text[open + 1..close]),
            ret,
            ret_path,
            errno,
        };
        handle(ctx, &mut st, &call);
        Ok(())
    })?;
    if !st.unfinished.is_empty() {
        ctx.report.notes.push(format!("{} unfinished system calls never resumed", st.unfinished.len()));
    }
    if let Some(pid) = st.first_pid {
        ctx.report.notes.push(format!(
            "strace wrote to the terminal (no -o): the first process's lines carried no pid until another was traced, so that process (pid {pid}) is shown as pid 0"
        ));
    }
    if st.native_aio.0 > 0 {
        let (requests, bytes) = st.native_aio;
        ctx.report.notes.push(format!(
            "{requests} request(s) ({bytes} bytes) submitted through Linux native AIO (io_submit): strace does not tie their completions to them, so they are NOT in these figures"
        ));
    }
    if !st.io_uring_pids.is_empty() {
        ctx.report.notes.push(format!(
            "process(es) {:?} used io_uring: their requests do not show in strace's lines and are NOT in these figures",
            st.io_uring_pids.iter().collect::<Vec<_>>()
        ));
    }
    if st.clones_unshown > 0 {
        ctx.report.notes.push(format!(
            "{} clone(s) of a whole file or to its end (ioctl FICLONE or FICLONERANGE) succeeded: strace does not show how many bytes they shared, so they are NOT in these figures",
            st.clones_unshown
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::import_text;
    use crate::Format;
    use iolens_record::event::IoOp;
    use iolens_record::event::{FLAG_CLONE, FLAG_COPY_SOURCE};

    const FOLLOWED: &str = r#"100 1700000000.000100 openat(AT_FDCWD, "/d/a, b.txt", O_RDONLY) = 3 <0.000010>
100 1700000000.000200 read(3, "x\"y,)"..., 4096) = 4096 <0.000020>
100 1700000000.000300 read(3, <unfinished ...>
101 1700000000.000310 openat(AT_FDCWD, "/d/out", O_WRONLY|O_CREAT|O_TRUNC, 0644) = 4 <0.000010>
100 1700000000.000400 <... read resumed>"", 4096) = 100 <0.000090>
100 1700000000.000500 lseek(3, 0, SEEK_SET) = 0 <0.000001>
100 1700000000.000600 pread64(3, "z", 512, 8192) = 512 <0.000005>
100 1700000000.000700 dup(3) = 5 <0.000001>
100 1700000000.000800 read(5, "", 10) = 10 <0.000001>
100 1700000000.000900 clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|SIGCHLD, child_tidptr=0x7f) = 200 <0.000100>
100 1700000000.001000 clone(child_stack=0x7f, flags=CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_THREAD) = 201 <0.000050>
200 1700000000.001100 read(3, "", 7) = 7 <0.000002>
201 1700000000.001200 write(5, "abc", 3) = -1 EBADF (Bad file descriptor) <0.000002>
100 1700000000.001300 write(1, "hello\n", 6) = 6 <0.000003>
--- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED} ---
200 1700000000.001400 fsync(3) = 0 <0.001000>
200 1700000000.001500 +++ exited with 0 +++
"#;

    #[test]
    fn calls_with_files_offsets_threads_and_forks() {
        let (c, r) = import_text(Format::Strace, FOLLOWED, true);
        let r = r.unwrap();
        let ops: Vec<(u32, u32, IoOp, u64, u64, i64)> =
            c.events.iter().map(|e| (e.pid, e.tid, e.op, e.offset, e.requested, e.result)).collect();
        assert_eq!(
            ops,
            vec![
                (100, 100, IoOp::Open, UNKNOWN_OFFSET, 0, 3),
                (100, 100, IoOp::Read, 0, 4096, 4096),
                (101, 101, IoOp::Open, UNKNOWN_OFFSET, 0, 4),
                (100, 100, IoOp::Read, 4096, 4096, 100),
                (100, 100, IoOp::Seek, 0, 0, 0),
                (100, 100, IoOp::Read, 8192, 512, 512),
                (100, 100, IoOp::Read, 0, 10, 10),
                (200, 200, IoOp::Read, 0, 7, 7),
                (100, 201, IoOp::Write, 10, 3, -(libc::EBADF as i64)),
                (200, 200, IoOp::Fsync, UNKNOWN_OFFSET, 0, 0),
            ]
        );
        assert_eq!(c.path_of(c.events[0].file), "/d/a, b.txt");
        let resumed = &c.events[3];
        assert_eq!(
            (resumed.start_ns, resumed.end_ns),
            (1_700_000_000_000_300_000, 1_700_000_000_000_390_000)
        );
        assert_eq!(r.malformed_count, 0);
        assert!(r.notes.is_empty());
    }

    #[test]
    fn without_pids_and_with_y_paths() {
        let text = "1700000000.000100 read(3</data/in>, \"\"..., 65536) = 65536 <0.000020>\n\
                    1700000000.000200 write(4</data/out>, \"\"..., 65536) = 65536 <0.000030>\n";
        let (c, r) = import_text(Format::Strace, text, true);
        assert_eq!(r.unwrap().events, 2);
        assert_eq!(c.path_of(c.events[1].file), "/data/out");
        assert_eq!(c.events[0].offset, UNKNOWN_OFFSET, "position of an inherited fd is unknown");
    }

    /// As coreutils' cp on ext4 makes them: a clone that fails, then copies asking for nearly
    /// SSIZE_MAX bytes; sendfile from an offset, splice into a pipe, clones that succeed.
    const COPIES: &str = r#"100 1700000000.000100 openat(AT_FDCWD, "/d/src", O_RDONLY) = 3</d/src> <0.000010>
100 1700000000.000200 openat(AT_FDCWD, "/d/dst", O_WRONLY|O_CREAT|O_EXCL, 0644) = 4</d/dst> <0.000010>
100 1700000000.000300 ioctl(4</d/dst>, BTRFS_IOC_CLONE or FICLONE, 3) = -1 EOPNOTSUPP (Operation not supported) <0.000007>
100 1700000000.000400 copy_file_range(3</d/src>, NULL, 4</d/dst>, NULL, 9223372035781033984, 0) = 1048576 <0.000556>
100 1700000000.001000 copy_file_range(3</d/src>, NULL, 4</d/dst>, NULL, 9223372035781033984, 0) = 0 <0.000006>
100 1700000000.001100 sendfile(4</d/dst>, 3</d/src>, [1000] => [101000], 100000) = 100000 <0.000100>
100 1700000000.001300 splice(3</d/src>, NULL, 6<pipe:[77]>, NULL, 30000, 0) = 30000 <0.000030>
100 1700000000.001400 copy_file_range(3</d/src>, [0] => [4096], 4</d/dst>, [8192] => [12288], 4096, 0) = 4096 <0.000010>
100 1700000000.001500 openat(AT_FDCWD, "/d/c", O_RDWR|O_CREAT, 0600) = 5</d/c> <0.000010>
100 1700000000.001600 ioctl(5</d/c>, BTRFS_IOC_CLONE_RANGE or FICLONERANGE, {src_fd=3, src_offset=4096, src_length=16384, dest_offset=8192}) = 0 <0.000020>
100 1700000000.001700 ioctl(5</d/c>, BTRFS_IOC_CLONE or FICLONE, 3) = 0 <0.000020>
100 1700000000.001800 ioctl(1</dev/pts/0>, TCGETS, {c_iflag=ICRNL}) = 0 <0.000002>
"#;

    #[test]
    fn copies_count_the_bytes_moved_on_both_files_and_clones_theirs_when_shown() {
        let (c, r) = import_text(Format::Strace, COPIES, true);
        let r = r.unwrap();
        let data: Vec<(&str, IoOp, u64, u64, i64, u16)> = c
            .events
            .iter()
            .filter(|e| e.op.is_data())
            .map(|e| (c.path_of(e.file), e.op, e.offset, e.requested, e.result, e.flags))
            .collect();
        let (source, clone) = (FLAG_COPY_SOURCE, FLAG_CLONE);
        let failed = -(libc::EOPNOTSUPP as i64);
        assert_eq!(
            data,
            vec![
                ("/d/src", IoOp::Read, 0, 0, failed, source | clone),
                ("/d/dst", IoOp::Write, 0, 0, failed, clone),
                ("/d/src", IoOp::Read, 0, 1 << 20, 1 << 20, source),
                ("/d/dst", IoOp::Write, 0, 1 << 20, 1 << 20, 0),
                ("/d/src", IoOp::Read, 1 << 20, 0, 0, source),
                ("/d/dst", IoOp::Write, 1 << 20, 0, 0, 0),
                // sendfile's offset is the source's, which it leaves where it was.
                ("/d/src", IoOp::Read, 1000, 100_000, 100_000, source),
                ("/d/dst", IoOp::Write, 1 << 20, 100_000, 100_000, 0),
                // The pipe is no file: one half.
                ("/d/src", IoOp::Read, 1 << 20, 30_000, 30_000, 0),
                ("/d/src", IoOp::Read, 0, 4096, 4096, source),
                ("/d/dst", IoOp::Write, 8192, 4096, 4096, 0),
                ("/d/src", IoOp::Read, 4096, 16384, 16384, source | clone),
                ("/d/c", IoOp::Write, 8192, 16384, 16384, clone),
            ],
            "the whole-file clone's bytes are not shown: it is left out, and noted"
        );
        let opens = c.events.iter().filter(|e| e.op == IoOp::Open).map(|e| e.result).collect::<Vec<_>>();
        assert_eq!(opens, [3, 4, 5], "-y names the file after the descriptor returned");
        assert_eq!(r.notes.len(), 1, "{:?}", r.notes);
        assert!(
            r.notes[0].starts_with("1 clone") && r.notes[0].contains("NOT in these figures"),
            "{:?}",
            r.notes
        );
    }

    /// `strace -f` writing to the terminal (no -o): lines carry `[pid N]` only while several
    /// processes are traced, and strace's own messages cut into a call's line.
    const TO_THE_TERMINAL: &str = "1700000000.000100 openat(AT_FDCWD</d>, \"y.bin\", O_WRONLY|O_CREAT|O_TRUNC, 0666) = 3</d/y.bin> <0.000051>
1700000000.000200 dup2(3</d/y.bin>, 1) = 1</d/y.bin> <0.000005>
1700000000.000300 close(3</d/y.bin>)  = 0 <0.000003>
1700000000.000400 vfork(strace: Process 201 attached
strace: Process 203 attached
 <unfinished ...>
[pid   201] 1700000000.000500 write(1</d/y.bin>, \"abc\", 3) = 3 <0.000010>
[pid   200] 1700000000.000600 <... vfork resumed>) = 201 <0.000200>
[pid   200] 1700000000.000650 write(1, \"x\", 1) = 1 <0.000004>
[pid   201] 1700000000.000700 +++ exited with 0 +++
1700000000.000800 write(1, \"de\", 2) = 2 <0.000004>
strace: Process 202 attached
[pid   202] 1700000000.000900 write(1</d/y.bin>, \"f\", 1) = 1 <0.000004>
[pid   200] 1700000000.001000 +++ exited with 0 +++
1700000000.001100 write(1, \"gh\", 2) = 2 <0.000004>
1700000000.001200 +++ exited with 0 +++
";

    #[test]
    fn output_to_the_terminal_is_read_process_by_process() {
        let (c, r) = import_text(Format::Strace, TO_THE_TERMINAL, true);
        let r = r.unwrap();
        let writes: Vec<(u32, u32, &str, i64)> = c
            .events
            .iter()
            .filter(|e| e.op == IoOp::Write)
            .map(|e| (e.pid, e.tid, c.path_of(e.file), e.result))
            .collect();
        assert_eq!(
            writes,
            vec![
                (201, 201, "/d/y.bin", 3),
                // The first process, named 200 once a second one is traced, stays one process.
                (0, 0, "/d/y.bin", 1),
                (0, 0, "/d/y.bin", 2),
                (202, 202, "/d/y.bin", 1),
                // The only process left when a line has no pid is 202.
                (202, 202, "/d/y.bin", 2),
            ]
        );
        assert_eq!(r.malformed_count, 0, "{:?}", r.malformed);
        assert!(r.notes.iter().any(|n| n.contains("pid 200") && n.contains("pid 0")), "{:?}", r.notes);
    }

    /// Requests submitted through native AIO and io_uring do not show in strace's lines as
    /// calls on files: they are noted, never silently left out.
    #[test]
    fn native_aio_and_io_uring_requests_are_noted() {
        let text = r#"300 1700000000.000100 io_setup(4, [0x7fa9]) = 0 <0.000033>
300 1700000000.000200 io_submit(0x7fa9, 3, [{aio_data=0, aio_lio_opcode=IOCB_CMD_PREAD, aio_fildes=7</d/f>, aio_buf=0x55, aio_nbytes=4096, aio_offset=61440}, {aio_data=0, aio_lio_opcode=IOCB_CMD_PWRITE, aio_fildes=7</d/f>, aio_buf=0x56, aio_nbytes=8192, aio_offset=0}, {aio_data=0, aio_lio_opcode=IOCB_CMD_PREAD, aio_fildes=7</d/f>, aio_buf=0x57, aio_nbytes=512, aio_offset=0}]) = 2 <0.000055>
300 1700000000.000300 io_getevents(0x7fa9, 1, 1, [{data=0, obj=0x55, res=4096, res2=0}], NULL) = 1 <0.000178>
301 1700000000.000400 io_uring_setup(8, {flags=0, sq_thread_cpu=0}) = 5<anon_inode:[io_uring]> <0.000010>
301 1700000000.000500 io_uring_enter(5<anon_inode:[io_uring]>, 1, 1, IORING_ENTER_GETEVENTS, NULL, 8) = 1 <0.000020>
"#;
        let (_, r) = import_text(Format::Strace, text, true);
        let notes = r.unwrap().notes;
        assert!(
            notes.iter().any(|n| n.starts_with("2 request(s) (12288 bytes)") && n.contains("native AIO")),
            "the two the kernel took: {notes:?}"
        );
        assert!(notes.iter().any(|n| n.contains("[301]") && n.contains("io_uring")), "{notes:?}");
    }

    #[test]
    fn the_loaders_mappings_are_not_data_mapped() {
        let text = r#"300 1700000000.000100 mmap(NULL, 46631, PROT_READ, MAP_PRIVATE, 3</etc/ld.so.cache>, 0) = 0x7fa9 <0.000004>
300 1700000000.000200 mmap(NULL, 913680, PROT_READ, MAP_PRIVATE|MAP_DENYWRITE, 3</usr/lib/libm.so.6>, 0) = 0x7fa9 <0.000005>
300 1700000000.000300 mmap(0x7fa9, 4096, PROT_READ|PROT_EXEC, MAP_PRIVATE|MAP_FIXED, 3</usr/lib/libm.so.6>, 0x1000) = 0x7fa9 <0.000005>
300 1700000000.000400 mmap(NULL, 1048576, PROT_READ|PROT_WRITE, MAP_SHARED, 4</d/data>, 0) = 0x7fb0 <0.000005>
"#;
        let (c, r) = import_text(Format::Strace, text, true);
        r.unwrap();
        let mapped: Vec<&str> =
            c.events.iter().filter(|e| e.op == IoOp::Mmap).map(|e| c.path_of(e.file)).collect();
        assert_eq!(mapped, ["/d/data"]);
    }

    #[test]
    fn a_line_cut_again_and_again_is_malformed_not_joined_without_end() {
        let text = "1700000000.000100 x( strace: Process 7 attached\n".repeat(10_000);
        let (_, r) = import_text(Format::Strace, &text, false);
        assert_eq!(r.unwrap().malformed_count, 5_000, "every second line ends a cut head");
    }

    #[test]
    fn a_child_that_runs_before_its_parents_fork_line_keeps_what_it_opened() {
        let text = r#"100 1700000000.000100 openat(AT_FDCWD, "/d/inherited", O_RDONLY) = 3 <0.000010>
200 1700000000.000300 openat(AT_FDCWD, "/d/own", O_RDONLY) = 4 <0.000010>
100 1700000000.000200 clone(child_stack=NULL, flags=SIGCHLD) = 200 <0.000200>
200 1700000000.000400 read(4, "", 10) = 10 <0.000001>
200 1700000000.000500 read(3, "", 10) = 10 <0.000001>
"#;
        let (c, r) = import_text(Format::Strace, text, true);
        r.unwrap();
        let reads: Vec<&str> =
            c.events.iter().filter(|e| e.op == IoOp::Read).map(|e| c.path_of(e.file)).collect();
        assert_eq!(reads, ["/d/own", "/d/inherited"]);
    }

    #[test]
    fn malformed_lines() {
        let text = "100 1700000000.0001 read(3, \"\", 1) = 1 <0.000001>\nnot strace at all\n100 1700000000.0002 read(3\n";
        let (_, r) = import_text(Format::Strace, text, false);
        let r = r.unwrap();
        assert_eq!(r.malformed_count, 2);
        assert_eq!(r.malformed.iter().map(|m| m.line).collect::<Vec<_>>(), vec![2, 3]);
        let (_, r) = import_text(Format::Strace, text, true);
        assert!(r.unwrap_err().to_string().contains(":2:"));
    }

    #[test]
    fn detection() {
        assert!(looks_like("100 1700000000.000100 read(3, \"\", 1) = 1 <0.000001>"));
        assert!(looks_like("1700000000.000100 close(3) = 0"));
        assert!(!looks_like("  8,0    3        1     0.000000000   697  Q   W 223490 + 8 [kworker]"));
    }
}
