//! Job files and flags: good jobs, inheritance, expansion, and every error pointing at its source.

use std::path::PathBuf;
use std::time::Duration;

use iolens_workload::*;

fn job(text: &str) -> Result<Job, JobError> {
    parse_job(text, "job.toml")
}

#[test]
fn defaults_are_inherited_and_overridden() {
    let j = job(r#"
name = "mixed"
block_unit = "4k"

[defaults]
target = "/scratch"
size = "1g"
time = "30s"
engine = "io_uring"
qd = 8

[[agent]]
name = "reader"
rw = "randread"
bs = "4k:70,64k:30"
distribution = "zipf"
zipf_theta = 1.1

[[agent]]
name = "writer"
rw = "write"
bs = 1048576
engine = "sync"
qd = 1
fsync = 8
rate = 50
arrival = "poisson"
ramp = "2s"
"#)
    .unwrap();
    assert_eq!(j.name, "mixed");
    assert_eq!(j.block_unit, 4096);
    let r = &j.agents[0];
    assert_eq!(r.target, PathBuf::from("/scratch"));
    assert_eq!(r.op, OpMix::Read);
    assert_eq!(r.pattern, Pattern::Random(Distribution::Zipf { theta: 1.1 }));
    assert_eq!(r.sizes, SizeSpec::Weighted(vec![(4096, 70), (65536, 30)]));
    assert_eq!((r.engine, r.queue_depth), (EngineKind::IoUring, 8));
    assert_eq!(r.region_size, Some(1 << 30));
    assert_eq!(r.termination.time, Some(Duration::from_secs(30)));
    let w = &j.agents[1];
    assert_eq!((w.op, w.pattern), (OpMix::Write, Pattern::Sequential));
    assert_eq!(w.sizes, SizeSpec::Fixed(1 << 20));
    assert_eq!((w.engine, w.queue_depth), (EngineKind::Sync, 1));
    assert_eq!(w.fsync, FsyncPolicy::EveryN(8));
    assert_eq!(w.rate, Rate { ops_per_s: 50.0, arrival: Arrival::Poisson });
    assert_eq!(w.ramp, Duration::from_secs(2));
    assert_ne!(r.seed, w.seed);
}

#[test]
fn threads_expand_and_op_pattern_keys_work() {
    let j = job("[[agent]]\nname = \"w\"\ntarget = \"d\"\nop = \"mix\"\nread_pct = 70\npattern = \"strided\"\nstride = \"64k\"\nthreads = 3\n").unwrap();
    assert_eq!(j.agents.len(), 3);
    assert_eq!(j.agents.iter().map(|a| a.name.as_str()).collect::<Vec<_>>(), ["w.0", "w.1", "w.2"]);
    assert_eq!(j.agents[0].op, OpMix::Mixed { read_pct: 70 });
    assert_eq!(j.agents[0].pattern, Pattern::Strided { stride: 65536 });
    assert_ne!(j.agents[0].seed, j.agents[1].seed);
}

#[test]
fn relative_targets_resolve_against_the_job_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.toml");
    std::fs::write(&path, "[[agent]]\ntarget = \"data\"\nrw = \"read\"\n").unwrap();
    let j = load_job_file(&path).unwrap();
    assert_eq!(j.agents[0].target, dir.path().join("data"));
    assert_eq!(j.name, "j", "the job is named after its file");
}

fn error(text: &str) -> JobError {
    job(text).unwrap_err()
}

fn at(e: &JobError) -> (usize, usize) {
    match &e.source {
        ErrorSource::File { line, column, .. } => (*line, *column),
        other => panic!("expected a file position, got {other:?}"),
    }
}

#[test]
fn unknown_keys_name_line_and_suggest() {
    let e = error("[[agent]]\ntarget = \".\"\nblocksize = \"4k\"\n");
    assert_eq!(at(&e).0, 3);
    assert_eq!(e.key, "agent[1].blocksize");
    assert_eq!(e.hint.as_deref(), Some("did you mean `bs`?"));
    let shown = e.to_string();
    assert!(shown.starts_with("job.toml:3:1: agent[1].blocksize: unknown key"), "{shown}");

    let e = error("[defaults]\nengin = \"sync\"\n[[agent]]\ntarget = \".\"\n");
    assert_eq!((e.key.as_str(), at(&e).0), ("defaults.engin", 2));
    assert_eq!(e.hint.as_deref(), Some("did you mean `engine`?"));

    let e = error("iodepth = 4\n[[agent]]\ntarget = \".\"\n");
    assert!(e.hint.unwrap().contains("[[agent]]"), "agent keys at top level are pointed to the agent table");

    let e = error("[[agent]]\ntarget = \".\"\nxyzzy = 1\n");
    assert!(e.hint.unwrap().starts_with("valid keys:"));
}

#[test]
fn bad_values_name_the_key_and_the_valid_choices() {
    let e = error("[[agent]]\ntarget = \".\"\n\nengine = \"iouring\"\n");
    assert_eq!((e.key.as_str(), at(&e)), ("agent[1].engine", (4, 10)));
    assert!(e.hint.as_ref().unwrap().contains("\"io_uring\""));

    let e = error("[[agent]]\ntarget = \".\"\nbs = true\n");
    assert!(e.message.contains("expected a size"), "{e}");
    let e = error("[[agent]]\ntarget = \".\"\nbs = \"4q\"\n");
    assert!(e.message.contains("unknown suffix"), "{e}");
    let e = error("[[agent]]\ntarget = \".\"\nqd = 8\n");
    assert!(e.hint.unwrap().contains("io_uring"), "qd > 1 needs an async engine");
    let e = error("[[agent]]\ntarget = \".\"\ndirect = true\nbs = 1000\n");
    assert!(e.message.contains("512"), "{e}");
    let e = error("[[agent]]\ntarget = \".\"\nrw = \"randread\"\npattern = \"sequential\"\n");
    assert!(e.message.contains("conflicts"), "{e}");
    let e = error("[[agent]]\ntarget = \".\"\nread_pct = 120\n");
    assert_eq!(e.key, "agent[1].read_pct");
    let e = error("[[agent]]\ntarget = \".\"\npattern = \"strided\"\n");
    assert!(e.hint.unwrap().contains("stride"));
    let e = error("[[agent]]\ntarget = \".\"\nfsync = \"always\"\n");
    assert!(e.hint.unwrap().contains("\"end\""));
    let e = error("[[agent]]\ntarget = \".\"\ntime = \"10 days\"\n");
    assert_eq!(e.key, "agent[1].time");
}

#[test]
fn structural_errors() {
    let e = error("name = \"x\"\n");
    assert!(e.message.contains("no agents") && e.hint.unwrap().contains("[[agent]]"));
    let e = error("[[agent]]\nrw = \"read\"\n");
    assert_eq!(e.key, "agent[1].target");
    assert_eq!(at(&e).0, 1);
    let e = error("[[agent]]\ntarget = \".\"\nbs = \"4k\n");
    assert!(e.message.starts_with("invalid TOML"), "{e}");
    assert_eq!(at(&e).0, 3);
    let e = error("[[agent]]\nname = \"a\"\ntarget = \".\"\n[[agent]]\nname = \"a\"\ntarget = \".\"\n");
    assert!(e.message.contains("two agents"), "{e}");
}

#[test]
fn flags_build_the_same_job_as_a_file() {
    let flags = FlagWorkload {
        target: "/scratch".into(),
        rw: "randread".into(),
        bs: "4k".into(),
        threads: 2,
        qd: 16,
        engine: "io_uring".into(),
        direct: true,
        size: Some("1g".into()),
        time: Some("10s".into()),
        seed: Some(7),
        ..FlagWorkload::default()
    };
    let from_flags = flags.to_job().unwrap();
    let from_file = job(r#"
name = "run"
[[agent]]
name = "agent"
target = "/scratch"
rw = "randread"
bs = "4k"
threads = 2
qd = 16
engine = "io_uring"
direct = true
size = "1g"
time = "10s"
seed = 7
"#)
    .unwrap();
    assert_eq!(from_flags.agents.len(), 2);
    for (a, b) in from_flags.agents.iter().zip(&from_file.agents) {
        assert_eq!(AgentSpec { name: b.name.clone(), ..a.clone() }, *b);
    }
    assert_eq!(from_flags.agents[0].name, "agent0");
}

#[test]
fn flag_errors_name_the_flag() {
    let e = FlagWorkload { bs: "4q".into(), ..FlagWorkload::default() }.to_job().unwrap_err();
    assert_eq!(e.source, ErrorSource::Flag("--bs".into()));
    assert!(e.to_string().starts_with("--bs: cannot read \"4q\""), "{e}");
    let e = FlagWorkload { read_pct: Some(150), rw: "randrw".into(), ..FlagWorkload::default() }
        .to_job()
        .unwrap_err();
    assert_eq!(e.source, ErrorSource::Flag("--read-pct".into()));
    let e = FlagWorkload { block_unit: Some("0".into()), ..FlagWorkload::default() }.to_job().unwrap_err();
    assert_eq!(e.source, ErrorSource::Flag("--block-unit".into()));
}
