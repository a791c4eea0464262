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

#[test]
fn sizes_and_durations_take_numbers_or_strings() {
    let j = job(r#"
[[agent]]
target = "/t"
rw = "randwrite"
bs = "4k:50,64k:30,1m:20"
size = 1073741824
bytes = "512MiB"
time = 1.5
ramp = 2
fsync = "end"
"#)
    .unwrap();
    let a = &j.agents[0];
    assert_eq!(a.sizes, SizeSpec::Weighted(vec![(4096, 50), (65536, 30), (1 << 20, 20)]));
    assert_eq!(a.region_size, Some(1 << 30));
    assert_eq!(
        a.termination,
        Termination { time: Some(Duration::from_millis(1500)), bytes: Some(512 << 20) }
    );
    assert_eq!(a.ramp, Duration::from_secs(2));
    assert_eq!(a.fsync, FsyncPolicy::AtEnd);
    assert_eq!(j.name, "job", "named after the file name given to parse_job");
    assert_eq!(parse_job("[[agent]]\ntarget = \"t\"\n", "bench/mixed.toml").unwrap().name, "mixed");
}

#[test]
fn defaults_apply_to_every_agent_and_agents_win() {
    let j = job(r#"
[defaults]
target = "/d"
rw = "randread"
read_pct = 70
distribution = "zipf"
threads = 2

[[agent]]
op = "write"

[[agent]]
op = "mix"
threads = 1

[[agent]]
rw = "read"
stride = "1m"
"#)
    .unwrap();
    let names: Vec<_> = j.agents.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["agent0.0", "agent0.1", "agent1", "agent2.0", "agent2.1"]);
    let zipf = Pattern::Random(Distribution::Zipf { theta: 1.2 });
    assert_eq!((j.agents[0].op, j.agents[0].pattern), (OpMix::Write, zipf), "own op, inherited pattern");
    assert_eq!((j.agents[2].op, j.agents[2].pattern), (OpMix::Mixed { read_pct: 70 }, zipf));
    assert_eq!(j.agents[3].op, OpMix::Read, "own rw beats inherited rw");
    assert_eq!(
        j.agents[3].pattern,
        Pattern::Strided { stride: 1 << 20 },
        "a stride makes sequential strided"
    );
    assert!(j.agents.iter().all(|a| a.target == std::path::Path::new("/d")));
    let seeds: std::collections::BTreeSet<_> = j.agents.iter().map(|a| a.seed).collect();
    assert_eq!(seeds.len(), 5, "every agent has its own seed");

    // Inherited settings that do not apply to an agent are fine; its own are not.
    let e = error("[defaults]\ntarget = \".\"\n[[agent]]\nrw = \"write\"\ndistribution = \"zipf\"\n");
    assert_eq!((e.key.as_str(), at(&e).0), ("agent[1].distribution", 5));
    assert!(e.message.contains("no effect"), "{e}");
}

#[test]
fn errors_in_defaults_say_which_agent() {
    let e = error("[defaults]\nqd = 8\nengine = \"io_uring\"\ntarget = \".\"\n[[agent]]\n[[agent]]\nengine = \"sync\"\n");
    assert_eq!((e.key.as_str(), at(&e)), ("defaults.qd", (2, 6)));
    assert!(e.message.ends_with("(in agent[2])"), "{e}");
    let e = error("[defaults]\nengine = \"uring\"\n[[agent]]\ntarget = \".\"\n");
    assert_eq!(e.key, "defaults.engine");
    assert!(e.hint.unwrap().starts_with("did you mean \"io_uring\"?"));
}

#[test]
fn direct_needs_aligned_sizes_everywhere() {
    let j = job("[[agent]]\ntarget = \".\"\ndirect = true\nbs = \"4k:1,1m:1\"\nsize = \"1g\"\n").unwrap();
    assert!(j.agents[0].direct);
    let e = error("[[agent]]\ntarget = \".\"\ndirect = true\nbs = \"4k:1,1000:1\"\n");
    assert_eq!(e.key, "agent[1].bs");
    let e = error("[[agent]]\ntarget = \".\"\ndirect = true\nrw = \"read\"\nstride = 1000\n");
    assert_eq!((e.key.as_str(), at(&e).0), ("agent[1].stride", 5));
    assert!(e.hint.unwrap().contains("O_DIRECT") || e.message.contains("O_DIRECT"));
    let e = error("[[agent]]\ntarget = \".\"\ndirect = true\nsize = 1000000\n");
    assert_eq!(e.key, "agent[1].size");
}

#[test]
fn syntax_errors_have_line_and_column() {
    let e = error("[[agent]]\ntarget = \".\"\nqd = = 4\n");
    assert_eq!(e.key, "");
    assert_eq!(at(&e), (3, 6));
    assert!(e.to_string().starts_with("job.toml:3:6: invalid TOML"), "{e}");
    let e = error("[[agent]]\ntarget = \".\"\ntarget = \"again\"\n");
    assert_eq!(at(&e).0, 3, "duplicate keys are syntax errors: {e}");
}

#[test]
fn agents_may_be_an_inline_array() {
    let j = job("agent = [{ target = \"a\" }, { target = \"b\", rw = \"write\" }]\n").unwrap();
    assert_eq!(j.agents.len(), 2);
    assert_eq!(j.agents[1].op, OpMix::Write);
    let e = error("agent = [{ target = \"a\", bz = \"4k\" }]\n");
    assert_eq!((e.key.as_str(), at(&e)), ("agent[1].bz", (1, 26)));
    assert_eq!(e.hint.as_deref(), Some("did you mean `bs`?"));
}

#[test]
fn unreadable_and_absolute_job_files() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("none.toml");
    let e = load_job_file(&missing).unwrap_err();
    assert_eq!(e.location().map(|(_, line, _)| line), Some(0));
    assert!(e.to_string().starts_with(&format!("{}: cannot read the job file", missing.display())), "{e}");

    let path = dir.path().join("abs.toml");
    std::fs::write(&path, "name = \"given\"\n[[agent]]\ntarget = \"/dev/null\"\n").unwrap();
    let j = load_job_file(&path).unwrap();
    assert_eq!((j.name.as_str(), j.agents[0].target.as_path()), ("given", std::path::Path::new("/dev/null")));

    std::fs::write(&path, "[[agent]]\ntarget = \".\"\nbs = \"4q\"\n").unwrap();
    let e = load_job_file(&path).unwrap_err();
    assert_eq!(e.location(), Some((path.display().to_string().as_str(), 3, 6)));
}

#[test]
fn more_value_errors() {
    for (text, key, needle) in [
        ("op = \"both\"", "op", "valid values: \"read\", \"write\", \"mix\""),
        ("pattern = \"rand\"", "pattern", "did you mean \"random\"?"),
        ("distribution = \"gaussian\"", "distribution", "did you mean \"normal\"?"),
        ("arrival = \"bursty\"", "arrival", "\"constant\", \"poisson\""),
        ("rate = -5", "rate", "0.001 to"),
        ("threads = 0", "threads", "at least 1"),
        ("qd = 0", "qd", "at least 1"),
        ("seed = -1", "seed", "non-negative integer"),
        ("direct = \"yes\"", "direct", "true or false"),
        ("bs = 0", "bs", "positive"),
        ("bs = \"4k:0,8k:0\"", "bs", "positive weight"),
        ("bs = \"4k:x\"", "bs", "whole number"),
        ("stride = 0", "stride", "positive"),
        ("size = \"1k\"\nbs = \"4k\"", "bs", "do not fit"),
        ("time = 0", "time", "positive"),
        ("rw = \"randread\"\nzipf_theta = 1.1", "zipf_theta", "distribution = \"zipf\""),
        ("distribution = \"zipf\"\nzipf_theta = 0", "zipf_theta", "between 0 (exclusive)"),
        ("distribution = \"normal\"\nspread = 0", "spread", "positive fraction"),
        ("op = \"write\"\nrw = \"randwrite\"\npattern = \"strided\"", "pattern", "conflicts"),
    ] {
        let e = error(&format!("[[agent]]\ntarget = \".\"\n{text}\n"));
        let shown = format!("{} / {}", e.message, e.hint.as_deref().unwrap_or(""));
        assert_eq!(e.key, format!("agent[1].{key}"), "{text}: {shown}");
        assert!(shown.contains(needle), "{text}: {shown}");
    }
    let e = error("[[agent]]\ntarget = 5\n");
    assert_eq!(
        (e.key.as_str(), e.message.as_str()),
        ("agent[1].target", "expected a string, found an integer")
    );
    let e = error("name = 3\n[[agent]]\ntarget = \".\"\n");
    assert_eq!((e.key.as_str(), e.message.as_str()), ("name", "expected a string, found an integer"));
}

/// The example job file of docs/guide.md ("Workloads").
#[test]
fn the_guide_example_parses() {
    let j = job(r#"
name = "mixed"
block_unit = 512

[defaults]
target = "/mnt/scratch"
size = "1g"
time = "30s"
ramp = "2s"

[[agent]]
name = "reader"
rw = "randread"
bs = "4k:70,64k:30"          # weighted sizes
engine = "io_uring"
qd = 16
direct = true
distribution = "zipf"
zipf_theta = 1.2

[[agent]]
name = "logger"
rw = "write"
bs = "1m"
rate = 50                    # ops/s, constant or arrival = "poisson"
fsync = 8                    # every 8 writes; "end" or "none"
"#)
    .unwrap();
    assert_eq!(j.agents.iter().map(|a| a.name.as_str()).collect::<Vec<_>>(), ["reader", "logger"]);
    assert_eq!(j.agents[1].fsync, FsyncPolicy::EveryN(8));
}

#[test]
fn noncontiguous_pattern_with_and_without_sieving() {
    let j = job(
        "[[agent]]\ntarget = \"/t\"\nrw = \"read\"\npattern = \"noncontig\"\nregions = 64\nregion_size = 8\nspacing = \"1k\"\nsieve = true\n",
    )
    .unwrap();
    let Pattern::Noncontiguous(n) = j.agents[0].pattern else { panic!("{:?}", j.agents[0].pattern) };
    assert_eq!((n.regions, n.region_size, n.spacing, n.sieve_buffer), (64, 8, 1024, Some(4 << 20)));
    assert_eq!(n.span(), 64 * 8 + 63 * 1024);
    assert_eq!(j.agents[0].sizes, SizeSpec::Fixed(n.span()), "buffers fit the largest sieved call");

    let plain =
        job("[[agent]]\ntarget = \"/t\"\npattern = \"noncontig\"\nregions = 4\nregion_size = 8\n").unwrap();
    let Pattern::Noncontiguous(n) = plain.agents[0].pattern else { panic!() };
    assert_eq!((n.spacing, n.sieve_buffer), (0, None));

    let e = error("[[agent]]\ntarget = \"/t\"\npattern = \"noncontig\"\nregion_size = 8\n");
    assert!(e.message.contains("number of regions") && e.hint.as_deref().unwrap().contains("regions"), "{e}");
    let e = error(
        "[[agent]]\ntarget = \"/t\"\nrw = \"write\"\npattern = \"noncontig\"\nregions = 2\nregion_size = 8\n",
    );
    assert!(e.message.contains("reads"), "{e}");
    let e = error(
        "[[agent]]\ntarget = \"/t\"\npattern = \"noncontig\"\nregions = 2\nregion_size = 8\nbs = \"4k\"\n",
    );
    assert!(e.message.contains("bs has no effect"), "{e}");
    let e = error("[[agent]]\ntarget = \"/t\"\nrw = \"read\"\nspacing = 8\n");
    assert!(e.message.contains("spacing has no effect"), "{e}");
    let e = error("[[agent]]\ntarget = \"/t\"\npattern = \"noncontig\"\nregions = 2\nregion_size = 8\nsieve_buffer = \"1m\"\n");
    assert!(e.message.contains("sieve_buffer has no effect"), "{e}");
    let e = error(
        "[[agent]]\ntarget = \"/t\"\npattern = \"noncontig\"\nregions = 2\nregion_size = 8\ndirect = true\n",
    );
    assert!(e.message.contains("512"), "{e}");
}

#[test]
fn verify_keys_reach_the_agent() {
    let j = job(r#"
[defaults]
target = "/scratch/f"
bs = "4k"
verify = "xxh3"

[[agent]]
rw = "write"
verify_after_write = true
verify_generation = 7

[[agent]]
rw = "randread"
verify = "pattern"
"#)
    .unwrap();
    assert_eq!(
        j.agents[0].verify,
        Some(Verify { kind: VerifyKind::Xxh3, after_write: true, generation: Some(7) })
    );
    assert_eq!(
        j.agents[1].verify,
        Some(Verify { kind: VerifyKind::Pattern, after_write: false, generation: None })
    );
    let plain = job("[[agent]]\ntarget = \"/f\"\n").unwrap();
    assert_eq!(plain.agents[0].verify, None);
}

#[test]
fn verify_refuses_what_it_cannot_check_and_says_why() {
    let cases = [
        ("rw = \"read\"\nverify = \"md5\"", 2, "crc32c"),
        ("rw = \"randrw\"\nverify = \"crc32c\"", 2, "rw = \"write\""),
        ("rw = \"write\"\nbs = \"4k:1,8k:1\"\nverify = \"crc32c\"", 3, "bs = \"4k\""),
        ("rw = \"write\"\nbs = 32\nverify = \"crc32c\"", 3, "bs = \"4k\""),
        ("rw = \"read\"\nstride = \"6k\"\nverify = \"crc32c\"", 3, "multiple"),
        (
            "rw = \"read\"\npattern = \"noncontig\"\nregions = 4\nregion_size = 64\nverify = \"crc32c\"",
            5,
            "rw = \"read\"",
        ),
        ("rw = \"read\"\nengine = \"null\"\nverify = \"crc32c\"", 3, "engine = \"sync\""),
        ("rw = \"write\"\nverify_after_write = true", 2, "verify = \"crc32c\""),
        ("rw = \"read\"\nverify = \"crc32c\"\nverify_after_write = true", 3, "rw = \"write\""),
        ("rw = \"read\"\nverify_generation = 3", 2, "verify = \"crc32c\""),
    ];
    for (body, line, hint) in cases {
        let e = error(&format!("[[agent]]\ntarget = \"/f\"\n{body}\n"));
        let text = format!("{e}\n{}", e.hint.clone().unwrap_or_default());
        assert!(text.contains(hint), "{body}: {text}");
        assert_eq!(at(&e).0, line + 2, "{body}: {text}");
    }
}

#[test]
fn random_map_defaults_to_writes_and_refuses_skewed_offsets() {
    let agent = |body: &str| {
        job(&format!("[[agent]]\ntarget = \"/scratch\"\n{body}\n")).map(|j| j.agents[0].random_map)
    };
    assert_eq!(agent("rw = \"randwrite\""), Ok(true), "writes: without replacement, as fio");
    assert_eq!(agent("rw = \"randread\""), Ok(false), "reads: with replacement");
    assert_eq!(agent("rw = \"randrw\""), Ok(false));
    assert_eq!(agent("rw = \"randwrite\"\nrandom_map = false"), Ok(false));
    assert_eq!(agent("rw = \"randread\"\nrandom_map = true"), Ok(true));
    assert_eq!(agent("rw = \"randwrite\"\ndistribution = \"zipf\""), Ok(false), "skewed: never mapped");
    let e =
        error("[[agent]]\ntarget = \"/x\"\nrw = \"randwrite\"\ndistribution = \"zipf\"\nrandom_map = true\n");
    assert_eq!((e.key.as_str(), at(&e)), ("agent[1].random_map", (5, 14)));
    assert!(e.message.contains("uniform") && e.message.contains("zipf"), "{e}");
    let e = error("[[agent]]\ntarget = \"/x\"\nrw = \"write\"\nrandom_map = true\n");
    assert!(e.message.contains("has no effect") && e.hint.as_deref().unwrap().contains("randwrite"), "{e}");
    let e = error("[[agent]]\ntarget = \"/x\"\nrw = \"randwrite\"\nrandom_map = \"yes\"\n");
    assert!(e.message.contains("true or false"), "{e}");
    // Inherited, it applies where it can and is ignored elsewhere.
    let j = job("[defaults]\ntarget = \"/x\"\nrandom_map = true\n[[agent]]\nrw = \"read\"\n[[agent]]\nrw = \"randread\"\n[[agent]]\nrw = \"randread\"\ndistribution = \"normal\"\n").unwrap();
    assert_eq!(j.agents.iter().map(|a| a.random_map).collect::<Vec<_>>(), [false, true, false]);
    // The flag reads the same.
    let flags = FlagWorkload { rw: "randwrite".into(), random_map: Some(false), ..FlagWorkload::default() };
    assert!(!flags.to_job().unwrap().agents[0].random_map);
    let e = FlagWorkload { rw: "read".into(), random_map: Some(true), ..FlagWorkload::default() }
        .to_job()
        .unwrap_err();
    assert_eq!(e.source, ErrorSource::Flag("--random-map".into()));
    assert!(error("[[agent]]\ntarget = \"/x\"\nnorandommap = true\n").hint.unwrap().contains("random_map"));
}
