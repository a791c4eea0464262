//! Copies the kernel makes (sendfile, splice, copy_file_range) and clones (FICLONE,
//! FICLONERANGE on a scratch XFS): a read of the source and a write of the destination each.

use super::*;

/// A scratch XFS file system (reflinks are on by default) on a loop device, unmounted when
/// dropped. `None`, with a note, where none can be made (not root, no mkfs.xfs or loop device).
struct XfsMount {
    mnt: PathBuf,
    _dir: tempfile::TempDir,
}

impl XfsMount {
    fn new() -> Option<XfsMount> {
        let dir = scratch();
        let (image, mnt) = (dir.path().join("xfs.img"), dir.path().join("mnt"));
        // XFS's least size; the image is sparse.
        std::fs::File::create(&image).unwrap().set_len(320 << 20).unwrap();
        std::fs::create_dir(&mnt).unwrap();
        let made = have("mkfs.xfs")
            && Command::new("mkfs.xfs").arg("-q").arg(&image).status().is_ok_and(|s| s.success())
            && Command::new("mount")
                .args(["-o", "loop"])
                .arg(&image)
                .arg(&mnt)
                .status()
                .is_ok_and(|s| s.success());
        if !require(made, "an XFS file system (root, mkfs.xfs, a loop device)") {
            return None;
        }
        Some(XfsMount { mnt, _dir: dir })
    }
}

impl Drop for XfsMount {
    fn drop(&mut self) {
        // Lazily when still busy, so the loop device is freed once the last user leaves.
        if !Command::new("umount").arg(&self.mnt).status().is_ok_and(|s| s.success()) {
            let _ = Command::new("umount").arg("-l").arg(&self.mnt).status();
        }
    }
}

/// A clone shares the source's extents with the destination: the program asked for the bytes
/// copied, the file system moved none. `cp` clones a whole file (FICLONE), `xfs_io` ranges
/// (FICLONERANGE, a length of 0 reaching the source's end); each is a read of the source and a
/// write of the destination, of the bytes cloned, and a note says no data moved.
#[test]
fn clones_count_the_bytes_shared_as_copied() {
    let Some(xfs) = XfsMount::new() else { return };
    let dir = xfs.mnt.as_path();
    write_file(&dir.join("a.bin"), 1 << 20);
    let (ops, summary) = iolens_ops(&["cp", "--reflink=always", "a.bin", "b.bin"], dir);
    // (offset, bytes asked for, result) of each read or write of `name`.
    let halves = |ops: &[Op], name: &str, op: &str| -> Vec<(Option<u64>, u64, i64)> {
        ops.iter()
            .filter(|o| o.path.ends_with(name) && o.op == op)
            .map(|o| (o.offset, o.requested, o.result))
            .collect()
    };
    let whole = (Some(0), 1 << 20, 1 << 20);
    assert_eq!(halves(&ops, "/b.bin", "write"), [whole], "{ops:?}");
    assert_eq!(halves(&ops, "/a.bin", "read"), [whole], "{ops:?}");
    assert_eq!(
        (summary["read_bytes"].as_u64(), summary["write_bytes"].as_u64()),
        (Some(1 << 20), Some(1 << 20))
    );
    let notes = summary["notes"].to_string();
    assert!(notes.contains("1 clone") && notes.contains("1.0 MiB") && notes.contains("no data"), "{notes}");

    if !require_tool("xfs_io") {
        return;
    }
    let a = dir.join("a.bin");
    let a = a.to_str().unwrap();
    let (ops, summary) = iolens_ops(
        &[
            "xfs_io",
            "-f",
            "-c",
            &format!("reflink {a} 4096 0 0"),
            "-c",
            &format!("reflink {a} 4096 8192 16384"),
            "-c",
            &format!("reflink {a}"),
            "d.bin",
        ],
        dir,
    );
    let to_end = (1 << 20) - 4096;
    assert_eq!(
        halves(&ops, "/d.bin", "write"),
        [(Some(0), to_end, to_end as i64), (Some(8192), 16384, 16384), whole],
        "{ops:?}"
    );
    assert_eq!(
        halves(&ops, "/a.bin", "read"),
        [(Some(4096), to_end, to_end as i64), (Some(4096), 16384, 16384), whole],
        "{ops:?}"
    );
    let notes = summary["notes"].to_string();
    assert!(notes.contains("3 clones"), "{notes}");
}

#[test]
fn cat_copies_in_the_kernel_and_counts_the_bytes_copied() {
    // coreutils' cat copies with copy_file_range, asking for nearly SSIZE_MAX bytes each time.
    let summary = compare(&["sh", "-c", "cat x.bin > y.bin"], |dir| write_file(&dir.join("x.bin"), 300_000));
    if !summary.is_null() {
        assert_eq!(summary["write_bytes"], 300_000, "bytes copied, not the length asked for");
        assert_eq!(summary["read_bytes"], 300_000);
    }
}

const SENDFILE_SPLICE_PROGRAM: &str = include_str!("../../programs/sendfile_splice.c");

#[test]
fn sendfile_and_splice_count_both_files() {
    let build = scratch();
    let Some(prog) = compile_c(build.path(), "sendfile", SENDFILE_SPLICE_PROGRAM) else { return };
    compare_counts(&[prog.to_str().unwrap()], |dir| write_file(&dir.join("src.bin"), 300_000), true);
}
