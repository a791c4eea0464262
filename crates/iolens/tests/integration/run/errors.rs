//! Usage errors of `iolens run` and `analyze`: job files and flags that are wrong are named,
//! with where and a hint.

use super::*;

#[test]
fn job_file_errors_name_file_line_key_and_suggest() {
    let dir = scratch();
    let job = dir.path().join("bad.toml");
    std::fs::write(&job, "name = \"x\"\n\n[[agent]]\ntarget = \".\"\nblocksize = \"4k\"\n").unwrap();
    let json = dir.path().join("bad.json");
    let out = iolens()
        .args(["run", "--job", job.to_str().unwrap(), "--json", json.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("bad.toml:5"), "file and line: {stderr}");
    assert!(stderr.contains("blocksize"), "the key: {stderr}");
    assert!(stderr.contains("bs"), "the suggestion: {stderr}");
    assert!(read_json(&json)["error"]["message"].is_string(), "JSON stays valid on failure");
}

#[test]
fn flag_errors_are_clear() {
    let out = iolens().args(["run", "--target", ".", "--bs", "4q"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--bs") && stderr.contains("4q"), "{stderr}");
}

/// A unit written apart from its number (`--time 200 ms`) is not read as a job file or an
/// extra argument in silence: the error says which word was the unit of which flag and hints
/// the value without a space, for every flag taking a size, duration or rate.
#[test]
fn a_unit_apart_from_its_number_is_named_with_a_hint() {
    let dir = scratch();
    let d = dir.path().to_str().unwrap();
    let json = dir.path().join("e.json");
    let j = json.to_str().unwrap();
    let cases: [(&[&str], &str); 7] = [
        (&["run", "--time", "200", "ms", "--target", d], "--time 200ms"),
        (&["run", "--target", d, "--time", "200", "ms"], "--time 200ms"),
        (&["run", "--bs", "4", "k", "--target", d], "--bs 4k"),
        (&["run", "--size", "1", "g"], "--size 1g"),
        (&["run", "--target", d, "--ramp", "1", "s"], "--ramp 1s"),
        (&["sweep", d, "--time", "200", "ms"], "--time 200ms"),
        (&["run", "--target", d, "--rate", "100", "iops"], "--rate 100"),
    ];
    for (args, hint) in cases {
        let out = iolens().args(args).args(["--json", j]).current_dir(dir.path()).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        let unit = args[args.iter().position(|a| a.starts_with("--") && hint.starts_with(*a)).unwrap() + 2];
        assert!(stderr.contains(&format!("`{unit}`")) && stderr.contains(hint), "{args:?}: {stderr}");
        assert!(!stderr.contains("cannot be used with"), "{args:?}: {stderr}");
        assert!(read_json(&json)["error"]["message"].as_str().unwrap().contains(hint), "{args:?}");
        std::fs::remove_file(&json).unwrap();
    }
    // A job file that happens to be named like a unit is still a job file.
    std::fs::write(dir.path().join("s"), "not toml [").unwrap();
    let out = iolens().args(["run", "--ramp", "1", "s"]).current_dir(dir.path()).output().unwrap();
    assert!(!String::from_utf8_lossy(&out.stderr).contains("without a space"), "an existing file is read");
}

/// `analyze --format` misspelt names the closest format, as flag values of `run` do.
#[test]
fn a_misspelt_analyze_format_gets_a_did_you_mean() {
    let dir = scratch();
    let trace = dir.path().join("t.txt");
    std::fs::write(&trace, "").unwrap();
    let out = iolens().arg("analyze").arg(&trace).args(["--format", "strce"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--format: unknown format \"strce\"") && err.contains("did you mean strace?"),
        "{err}"
    );
}
