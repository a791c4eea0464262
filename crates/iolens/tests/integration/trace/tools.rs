//! Everyday programs (dd, cp, tar, python, sqlite) under `iolens trace`, counted as strace counts
//! them: calls and bytes per class on the files of their directory.

use super::*;

#[test]
fn dd_reads_and_writes() {
    let summary = compare(&["dd", "if=src.bin", "of=dst.bin", "bs=64k"], |dir| {
        write_file(&dir.join("src.bin"), 3 << 20)
    });
    if summary.is_null() {
        return;
    }
    assert!(summary["busy_s"].as_f64().unwrap() > 0.0);
    assert!(summary["wall_s"].as_f64().unwrap() >= summary["busy_s"].as_f64().unwrap());
    // 48 full reads of 64 KiB, then one more that finds the end of the file.
    assert_eq!(
        summary["read_bytes"].as_u64().unwrap(),
        (3 << 20) + (64 << 10),
        "bytes the application asked for"
    );
}

#[test]
fn cp_of_a_file() {
    // cp tries a clone first; where the file system cannot clone, it copies.
    let summary = compare(&["cp", "a.bin", "b.bin"], |dir| write_file(&dir.join("a.bin"), 5 << 20));
    if !summary.is_null() {
        let notes = summary["notes"].to_string();
        assert!(notes.contains("1 clone ("), "{notes}");
    }
}

#[test]
fn tar_of_a_tree() {
    compare(&["tar", "cf", "out.tar", "tree"], |dir| {
        let tree = dir.join("tree");
        for sub in ["x", "x/y", "z"] {
            std::fs::create_dir_all(tree.join(sub)).unwrap();
        }
        for (i, f) in ["x/1", "x/y/2", "z/3", "4"].iter().enumerate() {
            write_file(&tree.join(f), (i + 1) * 70_000);
        }
    });
}

#[test]
fn tar_czf_opens_through_the_fortified_open() {
    // Debian's tar is built with _FORTIFY_SOURCE and opens through __openat_2; gzip writes the
    // archive through a pipe from tar.
    compare(&["tar", "czf", "out.tgz", "tree"], |dir| {
        for (i, f) in ["tree/a/1", "tree/a/2", "tree/b/3"].iter().enumerate() {
            std::fs::create_dir_all(dir.join(f).parent().unwrap()).unwrap();
            write_file(&dir.join(f), (i + 1) * 40_000);
        }
    });
}

#[test]
fn calls_on_devices_and_pipes_are_counted_in_a_note() {
    if !require_tool("strace") {
        return;
    }
    let cmd = ["sh", "-c", "dd if=/dev/zero bs=4k count=10 status=none | cat > out.bin"];
    let (strace_dir, iolens_dir) = (scratch(), scratch());
    let zero = strace_counts(&cmd, strace_dir.path(), Path::new("/dev/zero"), false)["read"];
    assert_eq!(zero, (10, 40960), "strace: dd's reads of /dev/zero");
    let (_, summary) = iolens_ops(&cmd, iolens_dir.path());
    let notes = summary["notes"].to_string();
    assert!(notes.contains("left out, as Darshan does"), "{notes}");
    assert!(notes.contains(&format!("{} calls ({} bytes) on character devices", zero.0, zero.1)), "{notes}");
    // dd's writes into the pipe and cat's reads from it, at least the 40960 bytes each way.
    let piped = notes.split("calls (").nth(1).and_then(|rest| rest.split(" bytes) on pipes").next());
    assert!(piped.and_then(|b| b.parse::<u64>().ok()).is_some_and(|b| b >= 2 * 40960), "{notes}");
}

#[test]
fn python_reads_via_buffered_io_and_pread() {
    let script = include_str!("../../programs/python_reads.py");
    compare(&["python3", "-c", script], |dir| write_file(&dir.join("data.bin"), 1 << 20));
}

#[test]
fn sqlite_inserts_with_fsync() {
    if !require_tool("sqlite3") {
        return;
    }
    let sql = "create table t(a, b); begin; insert into t values (1, randomblob(5000)); commit; \
               insert into t values (2, randomblob(20000)); insert into t select a + 2, b from t;";
    let summary = compare(&["sqlite3", "test.db", sql], |_| {});
    if !summary.is_null() {
        assert!(summary["fsyncs"].as_u64().unwrap() > 0, "sqlite syncs its journal and database");
    }
}
