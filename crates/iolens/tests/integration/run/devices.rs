//! Targets that are not plain new files: foreign files, block devices (a loop device over a
//! scratch file), a small file system that fills up, and one that refuses O_DIRECT.

use super::*;

#[test]
fn existing_foreign_file_is_never_written_but_can_be_read() {
    let dir = scratch();
    let victim = dir.path().join("precious.db");
    let content: Vec<u8> = (0..(256 * 1024u32)).map(|i| (i % 251) as u8).collect();
    std::fs::write(&victim, &content).unwrap();
    let json = dir.path().join("r.json");
    let out = iolens()
        .args(["run", "--quiet", "--target", victim.to_str().unwrap(), "--rw", "randwrite", "--bytes", "64k"])
        .args(["--json", json.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("refusing to write") && stderr.contains("--allow-overwrite"), "{stderr}");
    let v = read_json(&json);
    assert!(v["error"]["message"].as_str().unwrap().contains("precious.db"), "the JSON names the refusal");
    assert_eq!(std::fs::read(&victim).unwrap(), content, "left byte-identical");

    run_ok(&["run", "--quiet", "--target", victim.to_str().unwrap(), "--rw", "randread", "--bytes", "64k"]);
    assert_eq!(std::fs::read(&victim).unwrap(), content, "reading changes nothing");
    assert!(victim.exists(), "a file iolens did not create is not removed");
}

#[test]
fn block_devices_need_the_flag_and_mounted_ones_are_refused_anyway() {
    let loop0 = Path::new("/dev/loop0");
    if loop0.exists() {
        let out =
            iolens().args(["run", "--quiet", "--target", "/dev/loop0", "--rw", "write"]).output().unwrap();
        assert!(!out.status.success());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("block device") && stderr.contains("--allow-overwrite"), "{stderr}");
    }
    // The device holding the root file system is mounted: refused even with the flag. The
    // refusal happens before any descriptor is opened for writing.
    let device = iolens_device::device_for_path(Path::new("/")).unwrap();
    let Some(root) = require_some(device, "a block device under /") else { return };
    let node = Path::new("/dev").join(&root.name);
    if !require(node.exists(), &format!("{} (the device under /)", node.display())) {
        return;
    }
    let out = iolens()
        .args(["run", "--quiet", "--target", node.to_str().unwrap(), "--rw", "write", "--allow-overwrite"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("mounted"), "{stderr}");
}

/// Mounts a small tmpfs, or returns None where mounting is not permitted.
struct SmallFs {
    dir: tempfile::TempDir,
}

impl SmallFs {
    fn mount(size: &str) -> Option<SmallFs> {
        Self::mount_fs("tmpfs", &format!("size={size}"))
    }

    fn mount_fs(fstype: &str, options: &str) -> Option<SmallFs> {
        let dir = scratch();
        let ok = Command::new("mount")
            .args(["-t", fstype, "-o", options, fstype, dir.path().to_str().unwrap()])
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false);
        ok.then_some(SmallFs { dir })
    }
}

impl Drop for SmallFs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).output();
    }
}

#[test]
fn free_space_is_checked_and_enospc_mid_run_keeps_results() {
    let Some(fs) = require_some(SmallFs::mount("8m"), "a tmpfs mount (root)") else {
        return;
    };
    let out_dir = scratch();
    let json = out_dir.path().join("r.json");
    // Up front: a 64 MiB region cannot fit in 8 MiB.
    let out = iolens()
        .args([
            "run",
            "--quiet",
            "--target",
            fs.dir.path().to_str().unwrap(),
            "--rw",
            "write",
            "--size",
            "64m",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no space left"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Mid-run: a sparse 32 MiB file the user lets us overwrite fills the file system.
    let sparse = fs.dir.path().join("sparse.img");
    std::fs::File::create(&sparse).unwrap().set_len(32 << 20).unwrap();
    let out = iolens()
        .args(["run", "--quiet", "--target", sparse.to_str().unwrap(), "--rw", "write", "--bs", "64k"])
        .args(["--allow-overwrite", "--json", json.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let v = read_json(&json);
    let err = v["error"]["message"].as_str().unwrap();
    assert!(err.contains("No space left") && err.contains("sparse.img"), "{err}");
    let written = u(&v["aggregate"]["write_bytes"]);
    assert!(written > 1 << 20 && written < 32 << 20, "results so far: {written}");
}

#[test]
fn direct_io_refused_by_the_file_system_is_a_clear_error() {
    // ramfs has no O_DIRECT support.
    let Some(fs) = require_some(SmallFs::mount_fs("ramfs", "mode=755"), "a ramfs mount (root)") else {
        return;
    };
    let out = iolens()
        .args(["run", "--quiet", "--target", fs.dir.path().to_str().unwrap(), "--direct", "--size", "1m"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("O_DIRECT") && stderr.contains("ramfs") && stderr.contains("drop --direct"),
        "{stderr}"
    );
    assert_eq!(dir_entries(fs.dir.path()), Vec::<PathBuf>::new(), "the laid-out file is removed again");
}

/// A loop device over a scratch file: a real, unmounted block device whose data is ours.
struct LoopDevice {
    node: String,
    backing: PathBuf,
    _dir: tempfile::TempDir,
}

impl LoopDevice {
    fn attach(bytes: usize) -> Option<LoopDevice> {
        let dir = scratch();
        let backing = dir.path().join("backing.img");
        std::fs::write(&backing, vec![0x5a; bytes]).unwrap();
        let out = Command::new("losetup").args(["-f", "--show"]).arg(&backing).output().ok()?;
        if !out.status.success() {
            return None;
        }
        let node = String::from_utf8_lossy(&out.stdout).trim().to_string();
        Some(LoopDevice { node, backing, _dir: dir })
    }
}

impl Drop for LoopDevice {
    fn drop(&mut self) {
        let _ = Command::new("losetup").args(["-d", &self.node]).output();
    }
}

#[test]
fn block_device_reads_are_allowed_and_writes_need_the_flag() {
    let Some(dev) = require_some(LoopDevice::attach(8 << 20), "a loop device (root, losetup)") else {
        return;
    };
    let out_dir = scratch();
    let json = out_dir.path().join("b.json");
    run_ok(&[
        "run",
        "--quiet",
        "--target",
        &dev.node,
        "--rw",
        "randread",
        "--bytes",
        "1m",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(u(&read_json(&json)["aggregate"]["bytes"]), 1 << 20);
    assert!(std::fs::read(&dev.backing).unwrap().iter().all(|b| *b == 0x5a), "reading changes nothing");

    let out = iolens()
        .args(["run", "--quiet", "--target", &dev.node, "--rw", "write", "--bytes", "1m"])
        .output()
        .unwrap();
    assert!(!out.status.success(), "writing a device needs --allow-overwrite");
    assert!(std::fs::read(&dev.backing).unwrap().iter().all(|b| *b == 0x5a), "refused: nothing written");

    run_ok(&[
        "run",
        "--quiet",
        "--target",
        &dev.node,
        "--rw",
        "write",
        "--bs",
        "64k",
        "--bytes",
        "1m",
        "--direct",
        "--allow-overwrite",
    ]);
    let data = std::fs::read(&dev.backing).unwrap();
    assert!(data[..1 << 20].iter().any(|b| *b != 0x5a), "the first MiB was written");
    assert!(data[1 << 20..].iter().all(|b| *b == 0x5a), "nothing past the requested bytes");
}
