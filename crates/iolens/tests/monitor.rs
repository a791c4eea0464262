//! `iolens monitor`: iostat -x figures from /proc/diskstats.

use std::process::Command;

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
        for k in
            ["r_s", "w_s", "rmb_s", "wmb_s", "rrqm_s", "wrqm_s", "avgrq_sz", "avgqu_sz", "r_await", "w_await"]
        {
            assert!(s[k].as_f64().unwrap() >= 0.0, "{k}");
        }
        assert!((0.0..=100.0).contains(&s["util_pct"].as_f64().unwrap()));
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
