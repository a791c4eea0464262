//! Studies and their statistics through the CLI: DOE resume, ANOVA JSON, correlation.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

fn iolens() -> Command {
    Command::new(env!("CARGO_BIN_EXE_iolens"))
}

fn scratch() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

fn plan(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("plan.toml");
    std::fs::write(
        &path,
        format!(
            "[defaults]\ntarget = \"{}\"\nrw = \"randread\"\nengine = \"null\"\nsize = \"1m\"\ntime = \"250ms\"\n\
             [[agent]]\nname = \"a\"\n[doe]\nreplicates = 2\nseed = 9\nfactors = {{ bs = [\"4k\", \"16k\"], threads = [1, 2] }}\n",
            dir.display()
        ),
    )
    .unwrap();
    path
}

fn rows(csv: &Path) -> Vec<String> {
    std::fs::read_to_string(csv).unwrap_or_default().lines().skip(1).map(str::to_string).collect()
}

#[test]
fn an_interrupted_study_resumes_without_losing_or_repeating_runs() {
    let dir = scratch();
    let plan = plan(dir.path());
    let csv = dir.path().join("data.csv");
    let mut first = iolens()
        .arg("doe")
        .arg(&plan)
        .arg("--out")
        .arg(&csv)
        .arg("-q")
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Kill it hard once a few runs are on disk.
    crate::util::wait_for("three runs of the study on disk", || rows(&csv).len() >= 3);
    first.kill().unwrap();
    first.wait().unwrap();
    let before = rows(&csv);
    assert!((3..8).contains(&before.len()), "killed mid-study: {} rows", before.len());

    let second = iolens().arg("doe").arg(&plan).arg("--out").arg(&csv).arg("-q").output().unwrap();
    assert!(second.status.success(), "{}", String::from_utf8_lossy(&second.stderr));
    let stdout = String::from_utf8_lossy(&second.stdout);
    assert!(stdout.contains(&format!("{} were already done", before.len())), "{stdout}");
    let after = rows(&csv);
    assert_eq!(&after[..before.len()], &before[..], "rows already written stay as they were");
    let mut ids: Vec<u64> = after.iter().map(|r| r.split(',').nth(1).unwrap().parse().unwrap()).collect();
    ids.sort();
    assert_eq!(ids, (0..8).collect::<Vec<u64>>(), "every run exactly once");

    let third = iolens().arg("doe").arg(&plan).arg("--out").arg(&csv).arg("-q").output().unwrap();
    assert!(String::from_utf8_lossy(&third.stdout).contains("8 were already done, 0 ran now"));
    assert_eq!(rows(&csv), after);
}

/// `DIR/d.csv`: factors A (lo, hi) and B (x, y), `reps` runs per cell, response y = 10 (A=lo)
/// or 20 (A=hi) plus `noise[k]` for the k-th row.
fn two_by_two_csv(dir: &Path, reps: usize, noise: &[f64]) -> std::path::PathBuf {
    let mut text = String::from("A,B,y\n");
    let mut k = 0;
    for a in ["lo", "hi"] {
        for b in ["x", "y"] {
            for _ in 0..reps {
                text.push_str(&format!("{a},{b},{}\n", if a == "hi" { 20.0 } else { 10.0 } + noise[k]));
                k += 1;
            }
        }
    }
    let csv = dir.join("d.csv");
    std::fs::write(&csv, text).unwrap();
    csv
}

#[test]
fn doe_analyze_writes_the_anova_table_as_json() {
    let dir = scratch();
    // A 2×2 design with 3 replicates: A has a large effect, B none, no interaction.
    let noise = [0.1, -0.2, 0.1, 0.05, -0.05, 0.0, 0.2, -0.1, -0.1, 0.15, -0.15, 0.0];
    let csv = two_by_two_csv(dir.path(), 3, &noise);
    let json = dir.path().join("a.json");
    let out = iolens()
        .args(["doe", "analyze"])
        .arg(&csv)
        .args(["--response", "y", "--factors", "A,B", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let terms: Vec<&str> =
        v["anova"].as_array().unwrap().iter().map(|r| r["term"].as_str().unwrap()).collect();
    assert_eq!(terms, ["A", "B", "A:B", "Residual"]);
    let a = &v["anova"][0];
    assert!(a["F"].as_f64().unwrap() > 100.0 && a["p"].as_f64().unwrap() < 1e-6);
    // Balanced: the sums of squares add up to the total.
    let mean: f64 = 15.0 + noise.iter().sum::<f64>() / 12.0;
    let total: f64 = std::fs::read_to_string(&csv)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| l.rsplit(',').next().unwrap().parse::<f64>().unwrap())
        .map(|y| (y - mean).powi(2))
        .sum();
    let sum: f64 = v["anova"].as_array().unwrap().iter().map(|r| r["sum_sq"].as_f64().unwrap()).sum();
    assert!((sum - total).abs() < 1e-9 * total, "{sum} vs {total}");
    assert!(v["r_squared"].as_f64().unwrap() > 0.99);
    assert_eq!(v["final_model"], serde_json::json!(["A", "B"]), "the null interaction is removed");
    let rec = v["recommendations"].as_array().unwrap();
    assert_eq!(rec[0]["choice"], serde_json::json!({"Level": "hi"}));
    assert_eq!(rec[1]["choice"], serde_json::json!("NotSignificant"));
    assert!(String::from_utf8_lossy(&out.stdout).contains("SNS"));

    let bad = iolens()
        .args(["doe", "analyze"])
        .arg(&csv)
        .args(["--response", "z", "--factors", "A"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("no column \"z\""));
}

#[test]
fn doe_analyze_with_two_replicates_tests_normality_and_says_why_brown_forsythe_cannot_run() {
    let dir = scratch();
    let csv = two_by_two_csv(dir.path(), 2, &[0.3, -0.1, 0.2, -0.4, 0.05, 0.15, -0.25, 0.1]);
    let json = dir.path().join("a.json");
    let out = iolens()
        .args(["doe", "analyze"])
        .arg(&csv)
        .args(["--response", "y", "--factors", "A,B", "--full", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let d = &v["diagnostics"];
    assert_eq!(d["normality"]["test"], "ShapiroWilk", "{d}");
    let p = d["normality"]["p"].as_f64().expect("Shapiro-Wilk computed on 8 residuals");
    assert!(p > 0.0 && p <= 1.0);
    let why = d["equal_variance"]["skipped"].as_str().expect("Brown-Forsythe skipped");
    assert!(why.contains("two runs per cell"), "{why}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("Shapiro-Wilk: statistic"), "{stdout}");
    assert!(stdout.contains("Brown-Forsythe not computed: with two runs per cell"), "{stdout}");
    assert!(!stdout.contains("all values are equal"), "{stdout}");
}

#[test]
fn correlate_normalizes_by_the_expected_direction() {
    let dir = scratch();
    // Time falls as iops and bps rise (the right direction); bw rises with time (misleading);
    // arpt rises with time (right); hits is user-defined.
    let csv = dir.path().join("m.csv");
    std::fs::write(
        &csv,
        "time_s,iops,bw,arpt,bps,hits\n10,100,5,1.0,200,3\n8,120,6,0.8,260,1\n6,150,9,0.7,300,4\n4,190,8,0.5,420,2\n",
    )
    .unwrap();
    let json = dir.path().join("c.json");
    let out = iolens()
        .arg("correlate")
        .arg(&csv)
        .args(["--time", "time_s", "--metrics", "iops,bw,arpt,bps,hits", "--expect", "hits:pos", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let m = v["metrics"].as_array().unwrap();
    let get = |name: &str| m.iter().find(|x| x["name"] == name).unwrap();
    for name in ["iops", "arpt", "bps"] {
        let x = get(name);
        assert_eq!(x["direction_ok"], true, "{name}");
        assert!((x["normalized_cc"].as_f64().unwrap() - x["cc"].as_f64().unwrap().abs()).abs() < 1e-12);
    }
    let bw = get("bw");
    // bw: 5,6,9,8 against time 10,8,6,4 — negative, as expected.
    assert!(bw["cc"].as_f64().unwrap() < 0.0);
    let hits = get("hits");
    assert_eq!(hits["direction_ok"], hits["cc"].as_f64().unwrap() > 0.0);
    assert_eq!(
        hits["normalized_cc"].as_f64().unwrap().signum(),
        if hits["direction_ok"] == true { 1.0 } else { -1.0 }
    );
    // Pearson of iops with time computed by hand.
    let (x, y) = ([100.0, 120.0, 150.0, 190.0], [10.0, 8.0, 6.0, 4.0]);
    let (mx, my) = (x.iter().sum::<f64>() / 4.0, y.iter().sum::<f64>() / 4.0);
    let sxy: f64 = x.iter().zip(&y).map(|(a, b)| (a - mx) * (b - my)).sum();
    let sxx: f64 = x.iter().map(|a| (a - mx).powi(2)).sum();
    let syy: f64 = y.iter().map(|b| (b - my).powi(2)).sum();
    assert!((get("iops")["cc"].as_f64().unwrap() - sxy / (sxx * syy).sqrt()).abs() < 1e-12);

    let no_direction =
        iolens().arg("correlate").arg(&csv).args(["--time", "time_s", "--metrics", "hits"]).output().unwrap();
    assert_eq!(no_direction.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&no_direction.stderr).contains("--expect hits:neg"));
}

#[test]
fn validate_runs_the_four_sets_with_tiny_sizes() {
    let dir = scratch();
    let json = dir.path().join("v.json");
    let out = iolens()
        .arg("validate")
        .arg(dir.path())
        .args(["--volume", "4m", "--repeat", "2", "-q", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.matches("verdict:").count(), 4, "{stdout}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let sets = v["sets"].as_array().unwrap();
    assert_eq!(sets.iter().map(|s| s["set"].as_u64().unwrap()).collect::<Vec<_>>(), [1, 2, 3, 4]);
    for s in sets {
        let runs = s["runs"].as_array().unwrap();
        assert!(runs.len() >= 4 && runs.len() % 2 == 0, "every config twice: {}", runs.len());
        let names: Vec<&str> =
            s["correlations"].as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["iops", "bw_bytes_s", "arpt_s", "bps"]);
        for c in s["correlations"].as_array().unwrap() {
            if let (Some(cc), Some(n)) = (c["cc"].as_f64(), c["normalized_cc"].as_f64()) {
                assert!((n.abs() - cc.abs()).abs() < 1e-12);
                assert_eq!(n > 0.0, c["direction_ok"] == true);
            }
        }
        let misleading: Vec<&str> =
            s["misleading"].as_array().unwrap().iter().map(|m| m.as_str().unwrap()).collect();
        let wrong: Vec<&str> = s["correlations"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["direction_ok"] == false)
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(misleading, wrong);
    }
    // Set 2 reads the same volume at every size; set 4 keeps the application's bytes fixed
    // while data sieving moves more as the spacing grows.
    let bytes = |s: &Value| -> Vec<u64> {
        s["runs"].as_array().unwrap().iter().map(|r| r["bytes"].as_u64().unwrap()).collect()
    };
    assert!(bytes(&sets[1]).iter().all(|b| *b == 4 << 20));
    let set4 = &sets[3]["runs"].as_array().unwrap();
    assert!(bytes(&sets[3]).windows(2).all(|w| w[0] == w[1]));
    let moved = |spacing: &str| {
        set4.iter().find(|r| r["config"] == format!("spacing {spacing}")).unwrap()["moved_bytes"]
            .as_u64()
            .unwrap()
    };
    assert!(moved("8B") < moved("64B") && moved("64B") < moved("512B") && moved("512B") < moved("4KiB"));
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n != "v.json")
        .collect();
    assert!(left.is_empty(), "the scratch directory is removed: {left:?}");
}

#[test]
fn doe_refuses_a_csv_it_did_not_write_and_leaves_it_alone() {
    let dir = scratch();
    let plan = plan(dir.path());
    let csv = dir.path().join("plan.csv");
    // One line without a line end: an earlier reader took it for a cut row and truncated the file.
    let foreign = "precious data, not a study";
    std::fs::write(&csv, foreign).unwrap();
    let out = iolens().arg("doe").arg(&plan).arg("-q").output().unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("plan.csv") && stderr.contains("hint"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&csv).unwrap(), foreign);
}

#[test]
fn correlate_names_a_constant_or_non_numeric_column() {
    let dir = scratch();
    let data = dir.path().join("c.csv");
    std::fs::write(&data, "time,iops\n1,5\n2,5\n3,5\n").unwrap();
    let out = iolens().args(["correlate"]).arg(&data).args(["--time", "time"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("column \"iops\"") && !stderr.contains(" x:"), "{stderr}");
    std::fs::write(&data, "time,iops\n1,5\n\n2,nan\n3,7\n").unwrap();
    let out = iolens().args(["correlate"]).arg(&data).args(["--time", "time"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("c.csv:4: column \"iops\""), "the line counts blank lines: {stderr}");
}

/// A misspelt column name in `doe analyze` and `correlate` gets the closest column, with the
/// file and the flag that named it.
#[test]
fn a_misspelt_column_gets_a_did_you_mean() {
    let dir = scratch();
    let csv = two_by_two_csv(dir.path(), 2, &[0.0; 8]);
    let run = |args: &[&str]| {
        let out = iolens().args(["doe", "analyze"]).arg(&csv).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let e = run(&["--response", "Y", "--factors", "A"]);
    assert!(e.contains("d.csv: --response: no column \"Y\"") && e.contains("did you mean \"y\"?"), "{e}");
    let e = run(&["--response", "y", "--factors", "A,b"]);
    assert!(e.contains("--factors: no column \"b\"") && e.contains("did you mean \"B\"?"), "{e}");
    let data = dir.path().join("c.csv");
    std::fs::write(&data, "time,iops,bw_bytes_s\n1,5,9\n2,6,7\n3,7,8\n").unwrap();
    let out = iolens().args(["correlate"]).arg(&data).args(["--time", "tme"]).output().unwrap();
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(e.contains("--time: no column \"tme\"") && e.contains("did you mean \"time\"?"), "{e}");
    let out = iolens()
        .args(["correlate"])
        .arg(&data)
        .args(["--time", "time", "--metrics", "bw_byte_s"])
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("did you mean \"bw_bytes_s\"?"), "{e}");
    // --expect names a metric too: a misspelt one was ignored without a word.
    let out = iolens()
        .args(["correlate"])
        .arg(&data)
        .args(["--time", "time", "--metrics", "iops,bw_bytes_s", "--expect", "iop:pos"])
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{e}");
    assert!(
        e.contains("--expect \"iop\": not a metric correlated here") && e.contains("did you mean \"iops\"?"),
        "{e}"
    );
}
