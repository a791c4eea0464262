//! The trace's event streams: a reused `--out` directory, events lost on a full disk, and
//! streams read side by side (swept) giving the summary the stored unions give.

use super::*;

#[test]
fn a_reused_out_directory_is_refused_not_summed() {
    let dir = scratch();
    let out = dir.path().join("streams");
    let run = || {
        iolens()
            .args(["trace", "--json"])
            .arg(dir.path().join("s.json"))
            .arg("--out")
            .arg(&out)
            .args(["--", "dd", "if=/dev/zero", "of=x.bin", "bs=4k", "count=10"])
            .current_dir(dir.path())
            .output()
            .unwrap()
    };
    let first = run();
    assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("s.json")).unwrap()).unwrap();
    assert_eq!(summary["write_ops"].as_u64(), Some(10));
    let second = run();
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("earlier trace") && stderr.contains("hint:"), "{stderr}");
}

#[test]
fn events_lost_on_a_full_disk_are_counted_with_the_reason() {
    if !require(root(), "root, to mount a small tmpfs") {
        return;
    }
    let dir = scratch();
    let out = dir.path().join("full");
    std::fs::create_dir(&out).unwrap();
    // 64 KiB: the first 64 KiB buffer of events does not fit beside the stream's header (dd's
    // 50,000 writes take some 400 KiB of compact events).
    let mounted = Command::new("mount").args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"]).arg(&out).status();
    if !require(mounted.is_ok_and(|s| s.success()), "a tmpfs mount") {
        return;
    }
    struct Unmount<'a>(&'a Path);
    impl Drop for Unmount<'_> {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(self.0).status();
        }
    }
    let _unmount = Unmount(&out);
    let json = dir.path().join("s.json");
    let run = iolens()
        .args(["trace", "--json"])
        .arg(&json)
        .arg("--out")
        .arg(out.join("streams"))
        .args(["--", "dd", "if=/dev/zero", "of=x.bin", "bs=512", "count=50000"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let summary: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let (kept, notes) = (summary["write_ops"].as_u64().unwrap(), summary["notes"].to_string());
    let dropped: u64 = notes
        .split(" events were DROPPED")
        .next()
        .and_then(|head| head.rsplit(['"', ' ']).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no drop note: {notes}"));
    assert!(notes.contains("No space left on device"), "{notes}");
    // dd's 50,000 writes and its reads of /dev/zero (left out, not lost): every write is either
    // in the figures or counted as dropped, among the other calls dropped with it.
    assert!(kept < 50_000 && kept + dropped >= 50_000, "kept {kept}, dropped {dropped}: {notes}");
    assert!(!notes.contains("mid-write"), "the stream stays whole frames: {notes}");
}

/// Four threads read one file with pread, each call at its own offset, and write to a file of
/// their own, with an fsync at the end: more calls than the sweep's reorder window holds.
const THREADS_PREAD_PROGRAM: &str = include_str!("../../programs/threads_pread.c");

/// A trace of one process is read first with busy time swept as the calls come, through a
/// reorder window (its threads' calls come in blocks); with a per-op export it is read with
/// stored unions. The two summaries are the same.
#[test]
fn a_traced_process_s_threads_swept_give_the_stored_summary() {
    let dir = scratch();
    let Some(trace) = traced_c_program(dir.path(), "threads_pread", THREADS_PREAD_PROGRAM) else { return };
    let (swept, stored) = swept_and_stored(&trace, dir.path());
    assert_eq!(swept["ops"], 4 * 150_000 + 4 * 150 + 64);
    assert_eq!(swept, stored);
}

/// A process and its forked child read one file at the same time, each more calls than fill a
/// buffer: two streams whose calls interleave in time.
const FORKED_READERS_PROGRAM: &str = include_str!("../../programs/forked_readers.c");

/// The streams of several processes are read side by side, by time, and their busy time swept;
/// the summary is the one the stored unions give (a per-op export reads them that way).
#[test]
fn processes_read_side_by_side_give_the_stored_summary() {
    let dir = scratch();
    let Some(trace) = traced_c_program(dir.path(), "forked_readers", FORKED_READERS_PROGRAM) else {
        return;
    };
    assert_eq!(iolens_import::stream_files(&trace).unwrap().len(), 2, "one stream per process");
    let (swept, stored) = swept_and_stored(&trace, dir.path());
    assert_eq!(swept["ops"], 120_000 + 90_000 + 64);
    assert_eq!(swept, stored);
}
