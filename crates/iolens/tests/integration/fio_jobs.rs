//! `iolens run JOB.fio` and `iolens convert JOB.fio` end to end.

use serde_json::Value;

use crate::util::Env;

const WRITE_THEN_READ: &str = "\
[global]
filename=${DATA}
size=4m
bs=64k
[writer]
rw=write
end_fsync=1
[reader]
stonewall     ; reads what the writer wrote, after it
rw=read
";

#[test]
fn a_fio_job_runs_its_phases_in_order_and_converts_to_an_equivalent_toml_job() {
    let env = Env::new();
    let dir = env.mkdir("work");
    let job = env.path("wr.fio");
    std::fs::write(&job, WRITE_THEN_READ).unwrap();
    let data = dir.join("data.bin");
    let json = env.path("r.json");
    let out = env
        .iolens()
        .arg("run")
        .arg(&job)
        .arg("--json")
        .arg(&json)
        .arg("-q")
        .env("DATA", &data)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let agents = r["agents"].as_array().unwrap();
    let names: Vec<&str> = agents.iter().map(|a| a["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["writer", "reader"]);
    for a in agents {
        assert_eq!(a["bytes"].as_u64().unwrap(), 4 << 20, "{a}");
    }
    assert!(!data.exists(), "the file iolens created is removed");

    // The converted TOML runs the same job.
    let out = env.iolens().arg("convert").arg(&job).env("DATA", &data).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let toml = String::from_utf8(out.stdout).unwrap();
    assert!(toml.contains("phase = 2") && toml.contains("wr.fio:10"), "{toml}");
    let converted = env.path("wr.toml");
    std::fs::write(&converted, &toml).unwrap();
    let from_toml = iolens_workload::load_job(&converted).unwrap();
    std::env::set_var("DATA", &data);
    let from_fio = iolens_workload::load_job(&job).unwrap();
    assert_eq!(from_toml.agents, from_fio.agents);

    // Unsupported options stop the run before any I/O, naming file, line and key.
    std::fs::write(&job, "[j]\nfilename=/tmp/x\nzonemode=zbd\n").unwrap();
    let out = env.iolens().arg("run").arg(&job).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("wr.fio:3:1: [j].zonemode: fio option not supported by iolens"), "{err}");
}
