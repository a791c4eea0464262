//! The POSIX hooks: every sync call, calls made through syscall(2), ioctls passed through
//! unchanged, and one thread's calls kept in order across buffer flushes.

use super::*;

/// Every ioctl passes through the clone hook: the others must reach the kernel unchanged,
/// with their argument, through libc and through syscall().
const OTHER_IOCTLS_PROGRAM: &str = include_str!("../../programs/other_ioctls.c");

#[test]
fn other_ioctls_pass_through_unchanged() {
    let Some((_, summary, _dir)) = trace_c_program("ioctls", OTHER_IOCTLS_PROGRAM) else { return };
    assert_eq!(summary["ops"].as_u64(), Some(0), "a pipe is no file, and no clone was made: {summary}");
}

/// Every way to make written data durable, through libc and through syscall().
const SYNCS_PROGRAM: &str = include_str!("../../programs/syncs.c");

#[test]
fn every_sync_call_is_recorded_and_sync_counts_for_every_file_system() {
    let Some((kernel, ops, summary, _)) = under_strace_and_iolens("syncs", SYNCS_PROGRAM, true, |_| {})
    else {
        return;
    };
    assert_eq!(kernel["synced.txt sync"].0, 6, "strace: fsync, fdatasync, 2 sync_file_range, 2 syncfs");
    let on_file: Vec<&str> = ops
        .iter()
        .filter(|o| o.path.ends_with("/synced.txt") && o.op.contains("sync"))
        .map(|o| o.op.as_str())
        .collect();
    assert_eq!(
        on_file,
        ["fsync", "fdatasync", "sync_file_range", "sync_file_range", "syncfs", "syncfs"],
        "each call on the file, in order"
    );
    // sync() names no file: it writes out every file system, recorded as a syncfs of "/".
    let whole = ops.iter().filter(|o| o.path == "/" && o.op == "syncfs").count();
    assert_eq!(whole, 2, "sync() and syscall(SYS_sync): {ops:?}");
    assert_eq!(summary["fsyncs"].as_u64(), Some(8), "every one counts as a sync: {summary}");
}

/// File I/O through syscall() instead of the libc wrappers.
const RAW_SYSCALL_PROGRAM: &str = include_str!("../../programs/raw_syscalls.c");

#[test]
fn file_calls_made_through_syscall_count_like_their_wrappers() {
    let build = scratch();
    let Some(prog) = compile_c(build.path(), "raw-syscalls", RAW_SYSCALL_PROGRAM) else { return };
    let summary = compare_counts(&[prog.to_str().unwrap()], |_| {}, true);
    if !summary.is_null() {
        // 20 writes, and the clone's write half.
        assert_eq!(summary["write_ops"].as_u64(), Some(21), "{summary}");
    }
}

#[test]
fn one_thread_never_overlaps_itself() {
    // 100k preads fill many 64 KiB event buffers: the clock conversion at each flush must not
    // move a call before the end of the one it followed.
    let build = scratch();
    let source = include_str!("../../programs/preads.c");
    let Some(prog) = compile_c(build.path(), "preads", source) else { return };
    let dir = scratch();
    write_file(&dir.path().join("data.bin"), 1 << 20);
    let (ops, summary) = iolens_ops(&[prog.to_str().unwrap()], dir.path());
    let reads: Vec<&Op> = ops.iter().filter(|o| o.op == "read").collect();
    assert_eq!(reads.len(), 100_000);
    let overlaps: Vec<(u64, u64)> = reads
        .windows(2)
        .filter(|w| w[1].start_ns < w[0].end_ns)
        .map(|w| (w[0].end_ns, w[1].start_ns))
        .collect();
    assert!(
        overlaps.is_empty(),
        "{} calls start before the previous one ended: {:?}",
        overlaps.len(),
        &overlaps[..overlaps.len().min(5)]
    );
    assert!(reads.iter().all(|o| o.tid == reads[0].tid));
    assert_eq!(summary["concurrency"]["peak_in_flight"], 1, "{}", summary["concurrency"]);
}
