//! Asynchronous I/O: POSIX aio_fsync, Linux native AIO (fio's libaio engine, io_submit), and
//! io_uring rings, noted with their registered files.

use super::*;

/// POSIX aio's fsync requests, and a program that leaves by quick_exit after its handler
/// writes (no exit handler, no library destructor runs).
const AIO_FSYNC_QUICK_EXIT_PROGRAM: &str = include_str!("../../programs/aio_fsync_quick_exit.c");

#[test]
fn aio_fsync_requests_are_syncs_and_a_quick_exit_keeps_its_events() {
    let Some((_, summary, _dir)) = trace_c_program("aio-fsync", AIO_FSYNC_QUICK_EXIT_PROGRAM) else { return };
    let files = summary["files"].as_array().unwrap();
    let ops_of = |name: &str| {
        files
            .iter()
            .find(|f| f["path"].as_str().is_some_and(|p| p.ends_with(name)))
            .map(|f| f["ops"].as_u64())
    };
    assert_eq!(ops_of("/quick.txt"), Some(Some(101)), "100 writes and the handler's: {files:?}");
    assert_eq!(summary["fsyncs"].as_u64(), Some(2), "aio_fsync with O_SYNC and O_DSYNC: {summary}");
    let notes = summary["notes"].to_string();
    assert!(!notes.contains("no end marker"), "quick_exit is no kill: {notes}");
}

/// Runs fio's libaio engine reading a 1 MiB file in 4 KiB requests under `iolens trace`, with
/// `extra` options; the reads of 4 KiB recorded on the file (calls, bytes), and the requests
/// and bytes the native AIO note gives (0 without one).
fn fio_libaio_reads(extra: &[&str]) -> ((u64, i64), (u64, u64)) {
    let dir = scratch();
    let prepare = dir.path().join("data");
    write_file(&prepare, 1 << 20);
    let mut cmd = vec!["fio", "--name=aio", "--filename=data", "--size=1M", "--bs=4k", "--rw=randread"];
    cmd.extend(["--ioengine=libaio", "--iodepth=4", "--output=/dev/null"]);
    cmd.extend(extra);
    let (ops, summary) = iolens_ops(&cmd, dir.path());
    let reads: Vec<&Op> = ops
        .iter()
        .filter(|o| o.path.ends_with("/data") && o.op == "read" && o.layer == "posix" && o.requested == 4096)
        .collect();
    let notes = summary["notes"].to_string();
    let noted = notes.split("\",\"").find(|n| n.contains("native AIO")).map_or((0, 0), |note| {
        let numbers: Vec<u64> =
            note.split(|c: char| !c.is_ascii_digit()).filter_map(|w| w.parse().ok()).collect();
        (numbers[1], numbers[2])
    });
    ((reads.len() as u64, reads.iter().map(|o| o.result).sum()), noted)
}

#[test]
fn linux_native_aio_requests_are_recorded_when_reaped_and_noted_when_not() {
    if !require(have("fio") && fio_has_libaio(), "fio with its libaio engine") {
        return;
    }
    // fio reads the 1 MiB file in 256 requests of 4 KiB, reaped by io_getevents.
    assert_eq!(fio_libaio_reads(&[]), ((256, 1 << 20), (0, 0)), "every request recorded, none noted");
    // Reaped from the completion ring in user space where it can: what no hook saw reaped is
    // noted, with the bytes it asked for.
    let ((recorded, bytes), (noted, asked)) =
        fio_libaio_reads(&["--userspace_reap=1", "--iodepth_batch_complete_min=0"]);
    assert_eq!((recorded + noted, bytes as u64 + asked), (256, 1 << 20), "recorded or noted");
}

const AIO_PARTIAL_SUBMIT_PROGRAM: &str = include_str!("../../programs/aio_partial_submit.c");

#[test]
fn native_aio_blocks_the_kernel_did_not_take_are_not_said_to_be_unreaped() {
    if !require(Path::new("/usr/lib/x86_64-linux-gnu/libaio.so.1").exists(), "libaio (libaio1)") {
        return;
    }
    let dir = scratch();
    write_file(&dir.path().join("data"), 8192);
    let build = scratch();
    let Some(prog) = compile_c(build.path(), "aio-partial", AIO_PARTIAL_SUBMIT_PROGRAM) else { return };
    let (ops, summary) = iolens_ops(&[prog.to_str().unwrap()], dir.path());
    let reads = ops.iter().filter(|o| o.path.ends_with("/data") && o.op == "read").count();
    assert_eq!(reads, 1, "the read taken and reaped: {ops:?}");
    let notes = summary["notes"].to_string();
    assert!(!notes.contains("native AIO"), "the block refused was never submitted: {notes}");
}

/// Whether fio was built with its libaio engine.
fn fio_has_libaio() -> bool {
    Command::new("fio")
        .arg("--enghelp")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("libaio"))
}

const IO_URING_PROGRAM: &str = include_str!("../../programs/io_uring.c");

#[test]
fn an_io_uring_ring_is_noted_with_its_registered_files() {
    let build = scratch();
    let Some(prog) = compile_c(build.path(), "ring", IO_URING_PROGRAM) else { return };
    let dir = scratch();
    let run = Command::new(&prog).current_dir(dir.path()).status().unwrap();
    if !require(run.code() != Some(3), "io_uring (disabled on this machine)") {
        return;
    }
    let (ops, summary) = iolens_ops(&[prog.to_str().unwrap()], dir.path());
    assert_eq!(ops.iter().filter(|o| o.op == "write").count(), 1, "the plain write is counted");
    let notes = summary["notes"].to_string();
    assert!(
        notes.contains("used io_uring (files registered to their rings: ") && notes.contains("ring-data.bin"),
        "{notes}"
    );
}
