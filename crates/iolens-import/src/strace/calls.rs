//! What each system call means for the trace: the events it makes and how it changes the
//! descriptor tables (open, dup, close, fork and clone) and the positions (read, write, seek).

use iolens_record::event::{IoEvent, IoOp, Layer, FLAG_CLONE, FLAG_COPY_SOURCE, UNKNOWN_OFFSET};

use super::parse::{c_string, errno_number, fd_arg, field, number, offset_arg, split_args};
use super::{Call, Fd, State};
use crate::Ctx;

/// The call's result: what it returned, or minus its errno.
pub(super) fn result_of(c: &Call) -> i64 {
    match (c.ret, c.errno) {
        (Some(r), _) if r >= 0 => r,
        (_, Some(e)) => -errno_number(e),
        _ => -1,
    }
}

pub(super) fn emit(ctx: &mut Ctx, c: &Call, pid: u32, fd: Fd, op: IoOp, offset: u64, requested: u64) {
    emit_flagged(ctx, c, pid, fd.file, (op, 0), offset, requested, result_of(c));
}

#[allow(clippy::too_many_arguments)]
pub(super) fn emit_flagged(
    ctx: &mut Ctx,
    c: &Call,
    pid: u32,
    file: u32,
    (op, flags): (IoOp, u16),
    offset: u64,
    requested: u64,
    result: i64,
) {
    ctx.event(&IoEvent {
        pid,
        tid: c.tid,
        file,
        op,
        layer: Layer::Posix,
        flags,
        offset,
        requested,
        result,
        start_ns: c.start_ns,
        end_ns: c.start_ns.saturating_add(c.dur_ns),
    });
}

/// Where one end of an in-kernel copy was: its descriptor's file and offset. `explicit` is the
/// offset the call was given; without one the call used the descriptor's position, which it
/// advanced by the `moved` bytes.
pub(super) fn copy_end(
    st: &mut State,
    ctx: &mut Ctx,
    pid: u32,
    fd_text: &str,
    explicit: Option<u64>,
    moved: u64,
) -> Option<(u32, u64)> {
    let (fd, y) = fd_arg(fd_text)?;
    let entry = st.lookup(ctx, pid, fd, y)?;
    if let Some(at) = explicit {
        return Some((entry.file, at));
    }
    st.advance(pid, fd, moved);
    Some((entry.file, entry.offset))
}

/// Records an in-kernel copy as the preload does: a read of the source and a write of the
/// destination (each when it is a file), of the bytes moved; the read half carries
/// [`FLAG_COPY_SOURCE`] beside a write half, which holds the call's time.
pub(super) fn emit_copy(
    ctx: &mut Ctx,
    c: &Call,
    pid: u32,
    ends: [Option<(u32, u64)>; 2],
    moved: u64,
    result: i64,
    flags: u16,
) {
    let [source, destination] = ends;
    if let Some((file, at)) = source {
        let source_flag = if destination.is_some() { FLAG_COPY_SOURCE } else { 0 };
        emit_flagged(ctx, c, pid, file, (IoOp::Read, flags | source_flag), at, moved, result);
    }
    if let Some((file, at)) = destination {
        emit_flagged(ctx, c, pid, file, (IoOp::Write, flags), at, moved, result);
    }
}

pub(super) fn handle(ctx: &mut Ctx, st: &mut State, c: &Call) {
    let pid = st.process_of(c.tid);
    let a = |i: usize| c.args.get(i).copied().unwrap_or("");
    match c.name {
        "open" | "openat" | "creat" => {
            let (path_arg, flags) = if c.name == "openat" { (a(1), a(2)) } else { (a(0), a(1)) };
            let named = c.ret_path.filter(|p| p.starts_with('/')).map(str::to_string);
            let (Some(path), Some(fd)) = (named.or_else(|| c_string(path_arg)), c.ret.filter(|r| *r >= 0))
            else {
                return;
            };
            let id = st.path_id(ctx, &path);
            let offset = if flags.contains("O_APPEND") { UNKNOWN_OFFSET } else { 0 };
            let fd = fd as i32;
            let entry = Fd { file: id, offset };
            st.tables.entry(pid).or_default().insert(fd, entry);
            emit(ctx, c, pid, entry, IoOp::Open, UNKNOWN_OFFSET, 0);
        }
        "close" => {
            let Some((fd, y)) = fd_arg(a(0)) else { return };
            if let Some(entry) = st.lookup(ctx, pid, fd, y) {
                emit(ctx, c, pid, entry, IoOp::Close, UNKNOWN_OFFSET, 0);
            }
            if let Some(t) = st.tables.get_mut(&pid) {
                t.remove(&fd);
            }
        }
        "dup" | "dup2" | "dup3" | "fcntl" | "fcntl64" => {
            if c.name.starts_with("fcntl") && !a(1).starts_with("F_DUPFD") {
                return;
            }
            let (Some((fd, y)), Some(new_fd)) = (fd_arg(a(0)), c.ret.filter(|r| *r >= 0)) else { return };
            if let Some(entry) = st.lookup(ctx, pid, fd, y) {
                st.tables.entry(pid).or_default().insert(new_fd as i32, entry);
            }
        }
        "lseek" | "_llseek" => {
            let Some((fd, y)) = fd_arg(a(0)) else { return };
            let Some(entry) = st.lookup(ctx, pid, fd, y) else { return };
            emit(ctx, c, pid, entry, IoOp::Seek, number(a(1)).unwrap_or(UNKNOWN_OFFSET), 0);
            if let Some(e) = st.tables.get_mut(&pid).and_then(|t| t.get_mut(&fd)) {
                e.offset = c.ret.filter(|r| *r >= 0).map_or(UNKNOWN_OFFSET, |r| r as u64);
            }
        }
        "read" | "write" | "readv" | "writev" => {
            let Some((fd, y)) = fd_arg(a(0)) else { return };
            let Some(entry) = st.lookup(ctx, pid, fd, y) else { return };
            let op = if c.name.starts_with("read") { IoOp::Read } else { IoOp::Write };
            let requested = if c.name.ends_with('v') {
                c.ret.unwrap_or(0).max(0) as u64
            } else {
                number(a(2)).unwrap_or(0)
            };
            emit(ctx, c, pid, entry, op, entry.offset, requested);
            if let Some(moved) = c.ret.filter(|r| *r >= 0) {
                st.advance(pid, fd, moved as u64);
            }
        }
        "pread64" | "pwrite64" | "preadv" | "pwritev" | "preadv2" | "pwritev2" => {
            let Some((fd, y)) = fd_arg(a(0)) else { return };
            let Some(entry) = st.lookup(ctx, pid, fd, y) else { return };
            let op = if c.name.starts_with("pread") { IoOp::Read } else { IoOp::Write };
            let vectored = c.name.contains('v');
            let requested =
                if vectored { c.ret.unwrap_or(0).max(0) as u64 } else { number(a(2)).unwrap_or(0) };
            emit(ctx, c, pid, entry, op, number(a(3)).unwrap_or(UNKNOWN_OFFSET), requested);
        }
        "fsync" | "fdatasync" | "sync_file_range" | "syncfs" => {
            let Some((fd, y)) = fd_arg(a(0)) else { return };
            let Some(entry) = st.lookup(ctx, pid, fd, y) else { return };
            let op = match c.name {
                "fsync" => IoOp::Fsync,
                "fdatasync" => IoOp::Fdatasync,
                "syncfs" => IoOp::SyncFs,
                _ => IoOp::SyncRange,
            };
            emit(ctx, c, pid, entry, op, UNKNOWN_OFFSET, 0);
        }
        "copy_file_range" | "sendfile" | "sendfile64" | "splice" => copy(ctx, st, c, pid),
        "ioctl" if a(1).ends_with("FICLONE") || a(1).ends_with("FICLONERANGE") => {
            clone_range(ctx, st, c, pid)
        }
        "mmap" | "mmap2" => {
            let Some((fd, y)) = fd_arg(a(4)) else { return };
            // The loader's mappings of programs and libraries (code, or MAP_DENYWRITE, which
            // only the loader passes) and of its cache are not the program's data.
            let loader = a(2).contains("PROT_EXEC")
                || a(3).contains("MAP_DENYWRITE")
                || y.is_some_and(|path| path == "/etc/ld.so.cache");
            if fd < 0 || loader {
                return;
            }
            let Some(entry) = st.lookup(ctx, pid, fd, y) else { return };
            emit(
                ctx,
                c,
                pid,
                entry,
                IoOp::Mmap,
                number(a(5)).unwrap_or(UNKNOWN_OFFSET),
                number(a(1)).unwrap_or(0),
            );
        }
        "io_submit" => count_native_aio(st, c),
        "io_uring_setup" | "io_uring_enter" | "io_uring_enter2" => {
            st.io_uring_pids.insert(pid);
        }
        "clone" | "clone3" | "fork" | "vfork" => start_child(st, c, pid),
        _ => {}
    }
}

/// An in-kernel copy: the bytes it returned, read from the source and written to the
/// destination.
fn copy(ctx: &mut Ctx, st: &mut State, c: &Call, pid: u32) {
    let a = |i: usize| c.args.get(i).copied().unwrap_or("");
    // The length argument is only a cap (cp and cat pass nearly SSIZE_MAX): a copy
    // counts the bytes it returned.
    let moved = c.ret.unwrap_or(0).max(0) as u64;
    let (source, destination) = match c.name {
        // sendfile's offset is the source's; the destination's position advances.
        "sendfile" | "sendfile64" => ((a(1), offset_arg(a(2))), (a(0), None)),
        _ => ((a(0), offset_arg(a(1))), (a(2), offset_arg(a(3)))),
    };
    let ends = [source, destination].map(|(fd, at)| copy_end(st, ctx, pid, fd, at, moved));
    emit_copy(ctx, c, pid, ends, moved, result_of(c), 0);
}

/// A FICLONE or FICLONERANGE `ioctl`: recorded as a copy of the range, flagged a clone.
fn clone_range(ctx: &mut Ctx, st: &mut State, c: &Call, pid: u32) {
    let a = |i: usize| c.args.get(i).copied().unwrap_or("");
    // A clone shares the source's extents: a copy of the range, which strace shows
    // only when the call names its length.
    let (source, length, at) = if a(1).ends_with("FICLONE") {
        (a(2), None, [Some(0), Some(0)])
    } else {
        let value = |name| field(a(2), name).and_then(number);
        let length = value("src_length").filter(|n| *n > 0);
        (field(a(2), "src_fd").unwrap_or(""), length, [value("src_offset"), value("dest_offset")])
    };
    let failed = c.ret.is_none_or(|r| r < 0);
    let bytes = match (failed, length) {
        (true, _) => 0,
        (false, Some(n)) => n,
        (false, None) => {
            st.clones_unshown += 1;
            return;
        }
    };
    let at = at.map(|o| Some(o.unwrap_or(UNKNOWN_OFFSET)));
    let ends = [copy_end(st, ctx, pid, source, at[0], bytes), copy_end(st, ctx, pid, a(0), at[1], bytes)];
    let result = if failed { result_of(c) } else { bytes.min(i64::MAX as u64) as i64 };
    emit_copy(ctx, c, pid, ends, bytes, result, FLAG_CLONE);
}

/// The read and write requests an `io_submit` handed to the kernel, counted, not recorded.
fn count_native_aio(st: &mut State, c: &Call) {
    let a = |i: usize| c.args.get(i).copied().unwrap_or("");
    // The first `ret` control blocks were taken; reads and writes count.
    let taken = c.ret.unwrap_or(0).max(0) as usize;
    let blocks = a(2).strip_prefix('[').and_then(|b| b.strip_suffix(']')).unwrap_or("");
    for block in split_args(blocks).into_iter().take(taken) {
        let data = field(block, "aio_lio_opcode")
            .is_some_and(|op| ["IOCB_CMD_PREAD", "IOCB_CMD_PWRITE"].contains(&op));
        if data {
            let (requests, bytes) = &mut st.native_aio;
            *requests += 1;
            *bytes = bytes.saturating_add(field(block, "aio_nbytes").and_then(number).unwrap_or(0));
        }
    }
}

/// A new thread joins its process; a new process copies the parent's descriptor table.
fn start_child(st: &mut State, c: &Call, pid: u32) {
    let Some(child) = c.ret.filter(|r| *r > 0).map(|r| r as u32) else { return };
    if c.args.iter().any(|x| x.contains("CLONE_THREAD")) {
        st.process.insert(child, pid);
    } else {
        // The child may have run before the parent's line: what it opened stays.
        let inherited = st.tables.get(&pid).cloned().unwrap_or_default();
        let table = st.tables.entry(child).or_default();
        for (fd, entry) in inherited {
            table.entry(fd).or_insert(entry);
        }
    }
}
