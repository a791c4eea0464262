//! `iolens monitor`: iostat -x figures from /proc/diskstats.

use std::process::Command;

use crate::util::{require, require_some};

fn iolens() -> Command {
    Command::new(env!("CARGO_BIN_EXE_iolens"))
}

#[test]
fn samples_every_interval_as_table_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("m.json");
    let out = iolens()
        .args(["monitor", "--interval", "200ms", "--count", "2", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.matches("avgqu-sz").count(), 2, "one table per interval:\n{stdout}");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let samples = v["samples"].as_array().unwrap();
    let devices = iolens_device::active_disks().unwrap();
    assert_eq!(samples.len(), 2 * devices.len());
    for s in samples {
        for k in [
            "read_iops",
            "write_iops",
            "read_bw_bytes_s",
            "write_bw_bytes_s",
            "read_merges_s",
            "write_merges_s",
        ]
        .into_iter()
        .chain(["avg_request_bytes", "avg_queue", "read_await_s", "write_await_s"])
        {
            assert!(s[k].as_f64().unwrap() >= 0.0, "{k}");
        }
        assert!((0.0..=1.0).contains(&s["util"].as_f64().unwrap()));
        assert!((s["interval_s"].as_f64().unwrap() - 0.2).abs() < 0.15);
    }
}

#[test]
fn unknown_devices_are_named_with_a_hint() {
    let out = iolens().args(["monitor", "nosuchdisk9", "--count", "1"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("nosuchdisk9") && stderr.contains("hint"), "{stderr}");
}

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len().max(1) as f64
}

/// Under a steady, rate-limited O_DIRECT write load, `iolens monitor` and sysstat's `iostat -x`
/// sampling the same seconds report the same rates.
#[test]
fn agrees_with_iostat_on_the_same_interval() {
    let have_iostat = Command::new("iostat").arg("-V").output().is_ok_and(|o| o.status.success());
    if !require(have_iostat, "iostat (sysstat)") {
        return;
    }
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let Some(device) = require_some(
        iolens_device::device_for_path(dir.path()).ok().flatten().map(|d| d.name),
        &format!("a block device behind {}", dir.path().display()),
    ) else {
        return;
    };
    let mut load = iolens()
        .args(["run", "--rw", "randwrite", "--bs", "4k", "--direct", "--rate", "800", "--size", "32m"])
        .args(["--time", "7s", "-q", "--target"])
        .arg(dir.path().join("load.dat"))
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Past the layout and into the requests: the rate-limited load is steady from here on.
    let target = dir.path().join("load.dat");
    crate::util::wait_for("the load to write", || crate::util::holds_written_data(&target));
    let json = dir.path().join("m.json");
    let iostat = Command::new("iostat")
        .args(["-x", "-d", "-y", "-o", "JSON", &device, "1", "3"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let monitor = iolens()
        .args(["monitor", &device, "--interval", "1s", "--count", "3", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    let iostat = iostat.wait_with_output().unwrap();
    assert!(load.wait().unwrap().success());
    assert!(monitor.status.success(), "{}", String::from_utf8_lossy(&monitor.stderr));

    let theirs: serde_json::Value = serde_json::from_slice(&iostat.stdout).unwrap();
    let stats = theirs["sysstat"]["hosts"][0]["statistics"].as_array().unwrap();
    let disk = |k: &str| -> Vec<f64> { stats.iter().map(|s| s["disk"][0][k].as_f64().unwrap()).collect() };
    let ours: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let samples = ours["samples"].as_array().unwrap();
    let mine = |k: &str| -> Vec<f64> { samples.iter().map(|s| s[k].as_f64().unwrap()).collect() };
    assert_eq!((stats.len(), samples.len()), (3, 3));

    let (their_w, my_w) = (mean(&disk("w/s")), mean(&mine("write_iops")));
    assert!(their_w > 400.0, "the load reached the device: {their_w} w/s");
    let close = |a: f64, b: f64, what: &str| {
        assert!((a - b).abs() <= 0.1 * a.max(b) + 1.0, "{what}: iostat {a:.2} vs iolens {b:.2}");
    };
    close(their_w, my_w, "w/s");
    close(mean(&disk("wkB/s")) / 1024.0, mean(&mine("write_bw_bytes_s")) / 1048576.0, "wMiB/s");
    close(mean(&disk("r/s")), mean(&mine("read_iops")), "r/s");
    let (their_util, my_util) = (mean(&disk("util")), mean(&mine("util")) * 100.0);
    assert!((their_util - my_util).abs() <= 10.0, "%util: iostat {their_util:.1} vs iolens {my_util:.1}");
}
