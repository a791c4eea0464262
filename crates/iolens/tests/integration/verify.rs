//! End-to-end tests of data verification: files written with `--verify --keep`, damaged on
//! purpose (a flipped byte, two swapped blocks, a truncation, an older generation left
//! behind), then read with `--verify`.

use std::os::unix::fs::FileExt;
use std::path::Path;

use serde_json::Value;

use crate::util::Env;

const BS: u64 = 4096;
const BLOCKS: u64 = 64;
/// Exit code of a run whose verification found bad blocks.
const EXIT_VERIFY: i32 = 3;

impl Env {
    /// Runs `iolens run --quiet ARGS --json J` and returns the exit code, the JSON and the
    /// text output (stdout, then stderr).
    fn run_json(&self, name: &str, args: &[&str]) -> (i32, Value, String) {
        let json = self.path(&format!("{name}.json"));
        let out = self
            .iolens()
            .args(["run", "--quiet"])
            .args(args)
            .args(["--json", json.to_str().unwrap()])
            .output()
            .unwrap();
        let text =
            format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        let v: Value = std::fs::read_to_string(&json)
            .map(|t| serde_json::from_str(&t).expect("the JSON result is valid"))
            .unwrap_or(Value::Null);
        (out.status.code().unwrap_or(-1), v, text)
    }

    /// Writes `BLOCKS` verified blocks to `file` (kept) and returns the generation written.
    fn write(&self, file: &Path, engine: &str, extra: &[&str]) -> u64 {
        let mut args = vec![
            "--target",
            file.to_str().unwrap(),
            "--rw",
            "write",
            "--bs",
            "4k",
            "--size",
            "256k",
            "--engine",
            engine,
            "--verify",
            "crc32c",
            "--verify-after-write",
            "--keep",
        ];
        if engine == "io_uring" {
            args.extend(["--qd", "4"]);
        }
        args.extend(extra);
        let (code, v, err) = self.run_json("write", &args);
        assert_eq!(code, 0, "write failed: {err}");
        let verify = &v["verify"];
        assert_eq!(verify["failures_total"], 0, "{verify}");
        assert_eq!(verify["blocks_checked"], verify["blocks_written"], "the read-back checks every block");
        assert_eq!(verify["included_in_io_time"], false);
        verify["generation_written"].as_u64().expect("a generation")
    }

    /// Reads `file` sequentially with verification.
    fn read(&self, file: &Path, engine: &str, extra: &[&str]) -> (i32, Value, String) {
        let mut args = vec![
            "--target",
            file.to_str().unwrap(),
            "--rw",
            "read",
            "--bs",
            "4k",
            "--engine",
            engine,
            "--verify",
            "crc32c",
        ];
        if !extra.contains(&"--size") {
            args.extend(["--size", "256k"]);
        }
        if engine == "io_uring" {
            args.extend(["--qd", "4"]);
        }
        args.extend(extra);
        self.run_json("read", &args)
    }
}

fn failures(v: &Value) -> Vec<Value> {
    v["verify"]["failures"].as_array().cloned().unwrap_or_default()
}

/// Skips io_uring where the sandbox forbids it (the engine then refuses with this message).
fn uring_unavailable(err: &str) -> bool {
    !crate::util::require(!err.contains("io_uring is unavailable"), &format!("io_uring: {err}"))
}

/// Whether `engine` can run here (io_uring may be unavailable, e.g. in a sandbox): a small
/// unverified write to `file`.
fn engine_available(env: &Env, file: &Path, engine: &str) -> bool {
    let (code, _, err) = env.run_json(
        "probe",
        &[
            "--target",
            file.to_str().unwrap(),
            "--rw",
            "write",
            "--size",
            "8k",
            "--engine",
            engine,
            "--qd",
            "2",
        ],
    );
    !(engine == "io_uring" && code != 0 && uring_unavailable(&err))
}

fn clean_file_passes(engine: &str) {
    let env = Env::new();
    let file = env.path("data");
    if !engine_available(&env, &file, engine) {
        return;
    }
    env.write(&file, engine, &[]);
    let (code, v, err) = env.read(&file, engine, &[]);
    assert_eq!(code, 0, "{err}");
    let verify = &v["verify"];
    assert_eq!(verify["failures_total"], 0, "{verify}");
    assert_eq!(verify["blocks_checked"], BLOCKS);
    assert_eq!(verify["blocks_checked"], v["aggregate"]["read_ops"], "every block read is checked");
    assert_eq!(verify["included_in_io_time"], false);
    assert!(verify["cost_s"].as_f64().unwrap() >= 0.0);
}

fn flipped_byte_is_corrupt(engine: &str) {
    let env = Env::new();
    let file = env.path("data");
    if !engine_available(&env, &file, engine) {
        return;
    }
    let generation = env.write(&file, engine, &[]);
    let f = std::fs::OpenOptions::new().read(true).write(true).open(&file).unwrap();
    let at = 5 * BS + 1000;
    let mut b = [0u8; 1];
    f.read_exact_at(&mut b, at).unwrap();
    f.write_all_at(&[b[0] ^ 0x10], at).unwrap();
    drop(f);

    let (code, v, err) = env.read(&file, engine, &[]);
    assert_eq!(code, EXIT_VERIFY, "{err}");
    assert!(err.contains("corrupt block at offset 20480"), "{err}");
    assert_eq!(v["verify"]["failures_total"], 1);
    let [fail] = &failures(&v)[..] else { panic!("one failure: {v}") };
    assert_eq!(fail["kind"], "corrupt");
    assert_eq!(fail["offset"], 5 * BS);
    assert_eq!(fail["first_bad_offset"], at);
    assert_eq!(fail["first_bad_byte"], 1000);
    assert_eq!(fail["file"], file.to_str().unwrap());
    assert_eq!(fail["expected"]["generation"], generation);
    assert_eq!(fail["found"]["offset"], 5 * BS);
    assert_eq!(fail["found"]["generation"], generation);
}

#[test]
fn clean_file_passes_sync() {
    clean_file_passes("sync");
}

#[test]
fn clean_file_passes_io_uring() {
    clean_file_passes("io_uring");
}

#[test]
fn flipped_byte_is_corrupt_sync() {
    flipped_byte_is_corrupt("sync");
}

#[test]
fn flipped_byte_is_corrupt_io_uring() {
    flipped_byte_is_corrupt("io_uring");
}

#[test]
fn swapped_blocks_are_misplaced() {
    let env = Env::new();
    let file = env.path("data");
    env.write(&file, "sync", &[]);
    let f = std::fs::OpenOptions::new().read(true).write(true).open(&file).unwrap();
    let (mut a, mut b) = (vec![0u8; BS as usize], vec![0u8; BS as usize]);
    f.read_exact_at(&mut a, 2 * BS).unwrap();
    f.read_exact_at(&mut b, 7 * BS).unwrap();
    f.write_all_at(&b, 2 * BS).unwrap();
    f.write_all_at(&a, 7 * BS).unwrap();
    drop(f);

    // Random reads visit blocks in any order (and some twice): every visit of 2 or 7 fails.
    let (code, v, err) = env.read(&file, "sync", &[]);
    assert_eq!(code, EXIT_VERIFY, "{err}");
    let fails = failures(&v);
    assert_eq!(fails.len(), 2, "{v}");
    for (fail, (at, found)) in fails.iter().zip([(2 * BS, 7 * BS), (7 * BS, 2 * BS)]) {
        assert_eq!(fail["kind"], "misplaced");
        assert_eq!((fail["offset"].as_u64(), fail["found"]["offset"].as_u64()), (Some(at), Some(found)));
        assert_eq!(fail["expected"]["offset"], at);
        assert_eq!(fail["first_bad_byte"], 9, "the offset field's second byte differs first");
    }
}

#[test]
fn truncated_file_reports_short_blocks() {
    let env = Env::new();
    let file = env.path("data");
    env.write(&file, "sync", &[]);
    // Half of block 62 and all of block 63 are gone.
    let f = std::fs::OpenOptions::new().write(true).open(&file).unwrap();
    f.set_len(62 * BS + BS / 2).unwrap();
    drop(f);

    let (code, v, err) = env.read(&file, "sync", &[]);
    assert_eq!(code, EXIT_VERIFY, "{err}");
    assert_eq!(v["verify"]["blocks_checked"], BLOCKS, "the given size is the size expected");
    let fails = failures(&v);
    assert_eq!(fails.len(), 2, "{v}");
    assert_eq!((fails[0]["kind"].as_str(), fails[0]["offset"].as_u64()), (Some("short"), Some(62 * BS)));
    assert_eq!(fails[0]["bytes_read"], BS / 2);
    assert_eq!(fails[0]["first_bad_offset"], 62 * BS + BS / 2);
    assert_eq!(fails[0]["found"]["offset"], 62 * BS, "the header of the half block is still there");
    assert_eq!((fails[1]["kind"].as_str(), fails[1]["offset"].as_u64()), (Some("short"), Some(63 * BS)));
    assert_eq!(fails[1]["bytes_read"], 0);
    assert!(fails[1]["found"].is_null());
}

#[test]
fn an_old_generation_left_behind_is_stale() {
    let env = Env::new();
    let file = env.path("data");
    let old = env.write(&file, "sync", &[]);
    // A later run rewrites the first half only.
    let new = env.write(&file, "sync", &["--bytes", "128k"]);
    assert!(new > old, "generations grow from run to run");

    // The first block read sets the generation expected: the newer one.
    let (code, v, err) = env.read(&file, "sync", &[]);
    assert_eq!(code, EXIT_VERIFY, "{err}");
    assert_eq!(v["verify"]["failures_total"], BLOCKS / 2);
    let fails = failures(&v);
    assert_eq!(fails.len(), 16, "the list is bounded, the total is not");
    for (i, fail) in fails.iter().enumerate() {
        assert_eq!(fail["kind"], "stale");
        assert_eq!(fail["offset"], (32 + i as u64) * BS);
        assert_eq!(
            (fail["expected"]["generation"].as_u64(), fail["found"]["generation"].as_u64()),
            (Some(new), Some(old))
        );
        assert_eq!(fail["first_bad_byte"].as_u64().map(|b| (16..24).contains(&b)), Some(true));
    }

    // Expecting the old generation explicitly: the rewritten half is what does not match.
    let old_s = old.to_string();
    let (code, v, _) = env.read(&file, "sync", &["--verify-generation", &old_s]);
    assert_eq!(code, EXIT_VERIFY);
    assert_eq!(v["verify"]["failures_total"], BLOCKS / 2);
    assert_eq!(failures(&v)[0]["kind"], "newer");
    assert_eq!(failures(&v)[0]["offset"], 0);

    let new_s = new.to_string();
    let (code, v, _) = env.read(&file, "sync", &["--verify-generation", &new_s, "--bytes", "128k"]);
    assert_eq!(code, 0, "{v}");
}

#[test]
fn unverified_data_is_unwritten_and_bad_settings_are_refused() {
    let env = Env::new();
    let file = env.path("plain");
    let (code, _, err) = env.run_json(
        "plain",
        &["--target", file.to_str().unwrap(), "--rw", "write", "--bs", "4k", "--size", "64k", "--keep"],
    );
    assert_eq!(code, 0, "{err}");
    let (code, v, _) = env.read(&file, "sync", &["--size", "64k"]);
    assert_eq!(code, EXIT_VERIFY);
    assert_eq!(v["verify"]["failures_total"], 16);
    assert_eq!(failures(&v)[0]["kind"], "unwritten");

    let t = file.to_str().unwrap();
    for (args, says) in [
        (vec!["--rw", "read", "--verify", "md5"], "--verify"),
        (vec!["--rw", "randrw", "--verify", "crc32c"], "--rw write"),
        (vec!["--rw", "write", "--bs", "4k:1,8k:1", "--verify", "crc32c"], "single size"),
        (vec!["--rw", "write", "--bs", "32", "--verify", "pattern"], "header"),
        (vec!["--rw", "write", "--verify-after-write"], "--verify"),
        (vec!["--rw", "read", "--verify", "xxh3", "--verify-after-write"], "--rw write"),
        (vec!["--rw", "read", "--engine", "null", "--verify", "xxh3"], "null"),
    ] {
        let mut all = vec!["--target", t];
        all.extend(args.iter());
        let (code, v, err) = env.run_json("bad", &all);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(v["error"]["message"].is_string(), "{v}");
    }
}
