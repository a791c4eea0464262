//! The suites with tiny sizes and times: shape and internal consistency of tables and JSON.

use std::process::Command;

use serde_json::Value;

fn iolens() -> Command {
    Command::new(env!("CARGO_BIN_EXE_iolens"))
}

fn scratch() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

fn run_json(args: &[&str], dir: &tempfile::TempDir) -> (Value, String) {
    let json = dir.path().join("out.json");
    let out = iolens().args(args).arg("--json").arg(&json).arg("-q").output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    let v = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    (v, String::from_utf8_lossy(&out.stdout).into_owned())
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap()
}

#[test]
fn sweep_points_are_consistent_and_marked() {
    let dir = scratch();
    let data = dir.path().join("d");
    std::fs::create_dir(&data).unwrap();
    let (v, table) = run_json(
        &[
            "sweep",
            data.to_str().unwrap(),
            "--threads",
            "1,2",
            "--time",
            "150ms",
            "--size",
            "8m",
            "--min-bs",
            "4k",
            "--max-bs",
            "64k",
        ],
        &dir,
    );
    let curves = v["curves"].as_array().unwrap();
    assert_eq!(curves.len(), 2);
    for c in curves {
        let points = c["points"].as_array().unwrap();
        let sizes: Vec<u64> = points.iter().map(|p| p["bs"].as_u64().unwrap()).collect();
        assert_eq!(sizes, vec![4096, 8192, 16384, 32768, 65536]);
        for p in points {
            assert_eq!(p["bytes"].as_u64().unwrap(), p["ops"].as_u64().unwrap() * p["bs"].as_u64().unwrap());
            assert!(
                (f(&p["mbit_s"]) - f(&p["mib_s"]) * 1048576.0 * 8.0 / 1e6).abs()
                    < 1e-6 * f(&p["mbit_s"]).max(1.0)
            );
        }
        let knee = c["knee_bs"].as_u64().unwrap();
        let peak = points.iter().map(|p| f(&p["iops"])).fold(0.0, f64::max);
        for p in points.iter().take_while(|p| p["bs"].as_u64().unwrap() <= knee) {
            assert!(f(&p["iops"]) >= 0.9 * peak, "points up to the knee are in the flat region");
        }
        assert!(sizes.contains(&c["bw90_bs"].as_u64().unwrap()));
    }
    assert!(table.contains("<- knee"));
    assert_eq!(std::fs::read_dir(&data).unwrap().count(), 0, "the sweep removes its file");
}

#[test]
fn saturate_finds_a_point_on_its_curve() {
    let dir = scratch();
    let (v, table) = run_json(
        &[
            "saturate",
            dir.path().to_str().unwrap(),
            "--time",
            "150ms",
            "--size",
            "8m",
            "--max-concurrency",
            "8",
            "--rw",
            "randread",
        ],
        &dir,
    );
    let c = &v["curves"][0];
    let points = c["points"].as_array().unwrap();
    let conc: Vec<u64> = points.iter().map(|p| p["concurrency"].as_u64().unwrap()).collect();
    assert_eq!(&conc[..2], &[1, 2], "doubling from 1");
    let sat = c["saturation_concurrency"].as_u64().unwrap();
    let at = points.iter().find(|p| p["concurrency"].as_u64() == Some(sat)).unwrap();
    assert!(f(&at["iops"]) >= 0.9 * f(&c["peak_iops"]));
    assert!(table.contains("saturation:"));
}

#[test]
fn write_modes_break_the_phase_down() {
    let dir = scratch();
    let (v, table) =
        run_json(&["write-modes", dir.path().to_str().unwrap(), "--time", "300ms", "--size", "16m"], &dir);
    let modes = v["modes"].as_array().unwrap();
    let names: Vec<&str> = modes.iter().map(|m| m["mode"].as_str().unwrap()).collect();
    assert_eq!(names, ["naive", "fsync", "direct"]);
    for m in modes {
        let parts = f(&m["write_s"]) + f(&m["fsync_s"]) + f(&m["close_s"]);
        assert!(parts <= f(&m["phase_s"]) + 1e-6, "the parts fit in the phase");
        assert!(f(&m["effective_iops"]) <= f(&m["apparent_iops"]) + 1e-6);
    }
    assert_eq!(modes[0]["fsync_s"].as_f64(), Some(0.0));
    assert!(f(&modes[1]["fsync_s"]) > 0.0, "the fsync mode times its fsync");
    assert!(table.contains("apparent"));
}
