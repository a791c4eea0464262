//! Data safety against a hostile environment: forged or copied ownership marks, files changed
//! after iolens kept them, links and FIFOs under iolens's own names, alias block devices, size
//! sums that overflow, and leftovers of killed runs. Every foreign file is compared byte for
//! byte before and after.

use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileTypeExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::{
    entries, holds_written_data, require, require_some, s, user_data, wait_for, wait_past_mtime, Env,
};

fn copy_xattr(from: &Path, to: &Path) -> bool {
    let c = |p: &Path| std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap();
    let name = std::ffi::CString::new("user.iolens").unwrap();
    let mut buf = [0u8; 256];
    // SAFETY: valid C strings and buffers.
    let n = unsafe { libc::getxattr(c(from).as_ptr(), name.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    n > 0 && unsafe { libc::setxattr(c(to).as_ptr(), name.as_ptr(), buf.as_ptr().cast(), n as usize, 0) } == 0
}

/// The one file a `write --keep` run of 1 MiB leaves in `dir`.
fn kept_file(env: &Env, dir: &Path) -> std::path::PathBuf {
    let out = env.run(&[
        "run",
        "--quiet",
        "--target",
        s(dir),
        "--rw",
        "write",
        "--bs",
        "64k",
        "--size",
        "1m",
        "--keep",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let names = entries(dir);
    assert_eq!(names.len(), 1, "{names:?}");
    dir.join(&names[0])
}

#[test]
fn copied_marks_and_files_changed_after_keep_are_not_iolens_files() {
    let env = Env::new();
    let kept = env.mkdir("kept");
    let ours = kept_file(&env, &kept);

    // (1) A foreign file carrying a copy of the mark (cp -a, rsync -X do that).
    let victim = env.path("victim.dat");
    std::fs::write(&victim, user_data(1 << 20, 1)).unwrap();
    let marked = copy_xattr(&ours, &victim);
    for rw in ["randread", "read"] {
        let out = env.run(&[
            "run",
            "--quiet",
            "--target",
            s(&victim),
            "--rw",
            rw,
            "--bs",
            "4k",
            "--size",
            "1m",
            "--time",
            "200ms",
        ]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let out =
        env.run(&["run", "--quiet", "--target", s(&victim), "--rw", "write", "--bs", "4k", "--size", "1m"]);
    assert!(!out.status.success(), "a write to a foreign file with a copied mark (copied: {marked}) ran");
    assert_eq!(std::fs::read(&victim).unwrap(), user_data(1 << 20, 1));

    // (2) The kept file, then filled with the user's data: no longer iolens's.
    wait_past_mtime(&ours, env.dir.path());
    std::fs::write(&ours, user_data(1 << 20, 2)).unwrap();
    let out = env.run(&[
        "run",
        "--quiet",
        "--target",
        s(&kept),
        "--rw",
        "randread",
        "--bs",
        "4k",
        "--size",
        "1m",
        "--time",
        "200ms",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out =
        env.run(&["run", "--quiet", "--target", s(&kept), "--rw", "write", "--bs", "4k", "--size", "1m"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not created by iolens"));
    assert_eq!(std::fs::read(&ours).unwrap(), user_data(1 << 20, 2));

    // A kept file nobody touched stays iolens's: it may be written again.
    let fresh = env.mkdir("fresh");
    let args =
        ["run", "--quiet", "--target", s(&fresh), "--rw", "write", "--bs", "64k", "--size", "1m", "--keep"];
    assert!(env.run(&args).status.success());
    let again = env.run(&args);
    assert!(again.status.success(), "{}", String::from_utf8_lossy(&again.stderr));
}

#[test]
fn links_fifos_and_devices_under_own_names_are_never_followed_or_removed() {
    let env = Env::new();
    let victim = env.path("victim.dat");
    std::fs::write(&victim, user_data(65536, 3)).unwrap();
    // Dangling links where the suites put their files: refused, and left where they are.
    for (cmd, name) in [
        ("sweep", "iolens-sweep.dat"),
        ("saturate", "iolens-saturate.dat"),
        ("write-modes", "iolens-write-modes.dat"),
    ] {
        let dir = env.mkdir(cmd);
        let link = dir.join(name);
        std::os::unix::fs::symlink(env.path("nowhere"), &link).unwrap();
        let _ = env.run(&[cmd, s(&dir), "--time", "100ms", "--size", "1m"]);
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "{cmd} removed the link");
        assert!(!env.path("nowhere").exists(), "{cmd} created the link's target");
        // A link to a foreign file: not written, not removed.
        std::fs::remove_file(&link).unwrap();
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let _ = env.run(&[cmd, s(&dir), "--time", "100ms", "--size", "1m"]);
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "{cmd} removed the link");
    }
    // A FIFO under the run's own name: refused at once, not a hang.
    let dir = env.mkdir("fifo");
    let fifo = dir.join("iolens-run-agent0.dat");
    let c = std::ffi::CString::new(fifo.as_os_str().as_bytes()).unwrap();
    // SAFETY: valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let mut child = env
        .iolens()
        .args(["run", "--quiet", "--target", s(&dir), "--rw", "read", "--bs", "4k", "--time", "200ms"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if started.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("iolens hangs on a FIFO under its own name");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(!status.success());
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
    // A link to a character device under the run's own name, and a device named directly.
    std::fs::remove_file(&fifo).unwrap();
    std::os::unix::fs::symlink("/dev/null", &fifo).unwrap();
    let out =
        env.run(&["run", "--quiet", "--target", s(&dir), "--rw", "write", "--bs", "4k", "--size", "1m"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("symbolic link"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = env.run(&[
        "run",
        "--quiet",
        "--target",
        "/dev/null",
        "--rw",
        "write",
        "--bs",
        "4k",
        "--size",
        "1m",
        "--allow-overwrite",
    ]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("character device"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read(&victim).unwrap(), user_data(65536, 3));
}

#[test]
fn sizes_whose_sum_overflows_do_not_pass_the_free_space_check() {
    let env = Env::new();
    let dir = env.mkdir("data");
    let job = env.path("huge.toml");
    std::fs::write(
        &job,
        format!(
            "name = \"huge\"\n[defaults]\ntarget = \"{}\"\nsize = 9223372036854775807\nrw = \"write\"\nbs = \"1m\"\ntime = \"1s\"\n[[agent]]\nname = \"a\"\n[[agent]]\nname = \"b\"\n",
            dir.display()
        ),
    )
    .unwrap();
    let out = env.run(&["run", "--quiet", "--job", s(&job)]);
    assert!(!out.status.success(), "ran with 2 × 8 EiB on a small disk");
    // Refused as what it is — not a panic on an overflowing sum (exit 101).
    // (2 where the job is refused as bad input, 1 where the free-space check refuses it.)
    assert!(
        matches!(out.status.code(), Some(1 | 2)),
        "{:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("space") || err.contains("size"), "{err}");
    assert_eq!(entries(&dir), Vec::<String>::new(), "files left behind");
}

#[test]
fn a_killed_run_leaves_files_that_clean_and_the_next_run_remove() {
    let env = Env::new();
    let dir = env.mkdir("data");
    let foreign = dir.join("foreign.dat");
    std::fs::write(&foreign, user_data(4096, 4)).unwrap();
    let mut child = env
        .iolens()
        .args([
            "run",
            "--quiet",
            "--target",
            s(&dir),
            "--rw",
            "write",
            "--bs",
            "4k",
            "--size",
            "8m",
            "--time",
            "60s",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for("the run to write into its file", || {
        entries(&dir).iter().any(|n| n != "foreign.dat" && holds_written_data(&dir.join(n)))
    });
    child.kill().unwrap(); // SIGKILL: no chance to clean up
    child.wait().unwrap();
    assert_eq!(entries(&dir).len(), 2);
    let out = env.run(&["clean"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("removed") && text.contains("iolens-run-"), "{text}");
    assert_eq!(entries(&dir), vec!["foreign.dat".to_string()]);
    assert_eq!(std::fs::read(&foreign).unwrap(), user_data(4096, 4));
    let out = env.run(&["clean"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("nothing left"));

    // A killed quick: its scratch directory is removed by the next command that writes.
    let base = env.mkdir("quick");
    env.killed_quick(&base);
    assert!(!entries(&base).is_empty());
    let other = env.mkdir("other");
    let out =
        env.run(&["run", "--quiet", "--target", s(&other), "--rw", "write", "--bs", "4k", "--size", "1m"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("left behind by a killed run"));
    assert_eq!(entries(&base), Vec::<String>::new());
}

/// Runs a command as root tooling would; `None` when it fails (no loop support here).
fn sh(cmd: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(cmd).args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

#[test]
fn an_alias_loop_device_of_a_mounted_image_is_never_written() {
    let env = Env::new();
    let image = env.path("fs.img");
    std::fs::File::create(&image).unwrap().set_len(32 << 20).unwrap();
    let Some(first) =
        require_some(sh("losetup", &["-f", "--show", s(&image)]), "a loop device (root, losetup)")
    else {
        return;
    };
    let mnt = env.mkdir("mnt");
    let cleanup = |second: Option<&str>| {
        let _ = sh("umount", &[s(&mnt)]);
        if let Some(d) = second {
            let _ = sh("losetup", &["-d", d]);
        }
        let _ = sh("losetup", &["-d", &first]);
    };
    if sh("mkfs.ext4", &["-q", &first]).is_none() || sh("mount", &[&first, s(&mnt)]).is_none() {
        cleanup(None);
        require(false, "an ext4 file system on a loop device (mkfs.ext4, mount)");
        return;
    }
    std::fs::write(mnt.join("precious"), user_data(8192, 5)).unwrap();
    let _ = sh("sync", &[]);
    let Some(second) = sh("losetup", &["-f", "--show", s(&image)]) else {
        cleanup(None);
        require(false, "a second loop device (losetup)");
        return;
    };
    let before = std::fs::read(&image).unwrap();
    let out = env.run(&[
        "run",
        "--quiet",
        "--target",
        &second,
        "--rw",
        "write",
        "--bs",
        "4k",
        "--size",
        "1m",
        "--allow-overwrite",
    ]);
    let after = std::fs::read(&image).unwrap();
    let precious = std::fs::read(mnt.join("precious")).unwrap();
    cleanup(Some(&second));
    assert!(!out.status.success(), "wrote an alias of a mounted device");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&first), "{err}");
    assert!(before == after, "image changed");
    assert_eq!(precious, user_data(8192, 5));
}

/// The bytes and modification time of a file, to show a run left it exactly as it was.
fn content_and_mtime(p: &Path) -> (Vec<u8>, std::time::SystemTime) {
    (std::fs::read(p).unwrap(), std::fs::metadata(p).unwrap().modified().unwrap())
}

/// The run's `targets` entry for `path` (what preparation did to it).
fn target_entry<'a>(v: &'a serde_json::Value, path: &Path) -> &'a serde_json::Value {
    let targets = v["targets"].as_array().unwrap_or_else(|| panic!("no targets in the JSON: {v}"));
    targets
        .iter()
        .find(|t| t["path"].as_str() == Some(s(path)))
        .unwrap_or_else(|| panic!("no target {} in {targets:?}", path.display()))
}

/// Issue 23 item 7: a read run after a `--keep` write run reads the kept file as it is — no
/// layout, no extension, no cache drop — unless `--drop-cache` asks for the drop.
#[test]
fn a_kept_file_is_read_as_it_is_and_its_cache_kept_unless_asked() {
    let env = Env::new();
    let dir = env.mkdir("kept");
    let kept = kept_file(&env, &dir);
    let before = content_and_mtime(&kept);
    wait_past_mtime(&kept, env.dir.path()); // a rewrite would show in the mtime

    let json = env.path("read.json");
    let read = ["run", "--quiet", "--target", s(&dir), "--rw", "read", "--bs", "64k", "--size", "1m"];
    let out = env.run(&[&read[..], &["--json", s(&json)]].concat());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(content_and_mtime(&kept) == before, "the read run rewrote the kept file");
    let v = crate::util::read_json(&json);
    assert_eq!(v["aggregate"]["read_bytes"], 1 << 20, "the whole kept file was read");
    let t = target_entry(&v, &kept);
    assert_eq!(t["created"], false, "{t}");
    assert_eq!(t["laid_out_bytes"], 0, "{t}");
    assert_eq!(t["cache_dropped"], false, "{t}");

    // Traced: not one pwrite64 (the layout's call) in the read run.
    let log = env.path("strace.log");
    let traced = Command::new("strace")
        .args(["-f", "-qq", "-e", "trace=pwrite64,pwritev,pwritev2,fallocate,ftruncate", "-o", s(&log)])
        .arg(env!("CARGO_BIN_EXE_iolens"))
        .args(read)
        .env("IOLENS_STATE_DIR", &env.state)
        .stdin(Stdio::null())
        .output();
    if let Some(out) = traced.ok().filter(|o| o.status.success()) {
        let calls = std::fs::read_to_string(&log).unwrap();
        assert!(
            calls.trim().is_empty(),
            "the read run wrote or sized files: {calls}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert!(content_and_mtime(&kept) == before, "the traced read run rewrote the kept file");

    // Asked for: the cache is dropped (advice only: the data stays as it is).
    let out = env.run(&[&read[..], &["--drop-cache", "--json", s(&json)]].concat());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v = crate::util::read_json(&json);
    let t = target_entry(&v, &kept);
    assert_eq!(t["cache_dropped"], true, "{t}");
    assert_eq!(t["laid_out_bytes"], 0, "{t}");
    assert!(content_and_mtime(&kept) == before, "--drop-cache changed the kept file");

    // A reader asking for more than the file holds reads what is there: never extended.
    let out = env.run(&[
        "run",
        "--quiet",
        "--target",
        s(&dir),
        "--rw",
        "read",
        "--bs",
        "64k",
        "--size",
        "2m",
        "--json",
        s(&json),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v = crate::util::read_json(&json);
    let codes: Vec<&str> =
        v["warnings"].as_array().unwrap().iter().filter_map(|w| w["code"].as_str()).collect();
    assert!(codes.contains(&"size_clamped"), "{codes:?}");
    assert_eq!(v["aggregate"]["read_bytes"], 1 << 20);
    assert!(content_and_mtime(&kept) == before, "a larger read extended the kept file");

    // The two cache flags contradict each other.
    let out = env.run(&[&read[..], &["--drop-cache", "--keep-cache"]].concat());
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
}

/// A read of a directory without the run's file creates and lays the file out, then drops its
/// cache so reads start from the device (`--keep-cache` keeps it); the JSON says so.
#[test]
fn a_file_a_read_creates_is_laid_out_and_its_cache_dropped() {
    let env = Env::new();
    let dir = env.mkdir("new");
    let json = env.path("read.json");
    for (extra, dropped) in [(None, true), (Some("--keep-cache"), false)] {
        let mut args =
            vec!["run", "--quiet", "--target", s(&dir), "--rw", "read", "--bs", "64k", "--size", "1m"];
        args.extend(["--keep", "--json", s(&json)]);
        args.extend(extra);
        let out = env.run(&args);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let names = entries(&dir);
        assert_eq!(names.len(), 1, "{names:?}");
        let file = dir.join(&names[0]);
        let v = crate::util::read_json(&json);
        let t = target_entry(&v, &file);
        assert_eq!(t["created"], true, "{t}");
        assert_eq!(t["laid_out_bytes"], 1 << 20, "{t}");
        assert_eq!(t["cache_dropped"], dropped, "{extra:?}: {t}");
        assert_eq!(std::fs::metadata(&file).unwrap().len(), 1 << 20);
        std::fs::remove_file(&file).unwrap();
    }
}

/// A suite given a kept file reads it as it is, as `run` does: no layout of what an earlier run
/// kept. (Its own file, made by its first point, is laid out as before.)
#[test]
fn suites_read_a_kept_file_as_it_is() {
    let env = Env::new();
    let dir = env.mkdir("kept");
    let out = env.run(&[
        "run",
        "--quiet",
        "--target",
        s(&dir),
        "--rw",
        "write",
        "--bs",
        "64k",
        "--size",
        "1m",
        "--keep",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let kept = dir.join(&entries(&dir)[0]);
    let before = content_and_mtime(&kept);
    wait_past_mtime(&kept, env.dir.path()); // a rewrite would show in the mtime
    let sweep =
        ["sweep", s(&kept), "--quiet", "--time", "50ms", "--size", "1m", "--threads", "1", "--buffered"];
    let out = env.run(&[&sweep[..], &["--min-bs", "64k", "--max-bs", "128k"]].concat());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(content_and_mtime(&kept) == before, "sweep rewrote the kept file");
    let out = env.run(&[
        "saturate",
        s(&kept),
        "--quiet",
        "--time",
        "50ms",
        "--size",
        "1m",
        "--max-concurrency",
        "2",
        "--rw",
        "randread",
        "--buffered",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(content_and_mtime(&kept) == before, "saturate rewrote the kept file");
}
