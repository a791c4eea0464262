//! fio job files: parsed as fio parses them (checked against `fio --parse-only --debug=parse` on
//! the same files when fio is installed) and translated into the iolens job they describe.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use iolens_workload::{
    fio_to_toml, load_fio_file, parse_fio, parse_job, Distribution, EngineKind, FsyncPolicy, Job, OpMix,
    Pattern, SizeSpec,
};

/// fio's own reading of a job file: for each job section (in order, `[global]` left out), the
/// numeric value fio resolved for each option (`out=`), or the text it stored.
fn fio_resolves(path: &Path, env: &[(&str, &str)]) -> Vec<(String, BTreeMap<String, String>)> {
    let out = Command::new("fio")
        .args(["--parse-only", "--debug=parse"])
        .arg(path)
        .envs(env.iter().copied())
        .output()
        .expect("fio (apt-get install fio)");
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "fio refused the file:\n{text}");
    let mut sections: Vec<(String, BTreeMap<String, String>)> = Vec::new();
    let mut globals: BTreeMap<String, String> = BTreeMap::new();
    let mut current = String::new();
    let mut last_key = String::new();
    for line in text.lines() {
        let body = line.splitn(3, ' ').nth(2).map(str::trim_start).unwrap_or("");
        let body = body.trim_start_matches(|c: char| c.is_ascii_digit()).trim();
        if let Some(name) = body.strip_prefix("Parsing section [").and_then(|r| r.strip_suffix(']')) {
            current = name.to_string();
            if name != "global" {
                sections.push((name.to_string(), globals.clone()));
            }
        } else if let Some(rest) = body.strip_prefix("handle_option=") {
            let (key, ptr) = rest.split_once(", ptr=").unwrap();
            last_key = key.to_string();
            let map = if current == "global" { &mut globals } else { &mut sections.last_mut().unwrap().1 };
            map.insert(key.to_string(), ptr.trim().to_string());
        } else if let Some(out) = body.strip_prefix("ret=0, out=") {
            let map = if current == "global" { &mut globals } else { &mut sections.last_mut().unwrap().1 };
            map.insert(last_key.clone(), out.trim().to_string());
        }
    }
    sections
}

fn have_fio() -> bool {
    let runs = Command::new("fio").arg("--version").output().is_ok_and(|o| o.status.success());
    crate::prerequisite::require(runs, "fio (the comparison with fio's own parse)")
}

fn no_includes(p: &Path) -> Result<String, String> {
    Err(format!("{} not available", p.display()))
}

fn num(m: &BTreeMap<String, String>, key: &str) -> u64 {
    m.get(key).unwrap_or_else(|| panic!("fio resolved no {key}: {m:?}")).parse().unwrap()
}

const MAIN: &str = "\
; A test job in fio's syntax, written for these tests.
[global]
ioengine=libaio   ; becomes io_uring
direct=1
bs=${BS}
size=16m
directory=${DIR}
iodepth = 8
include extra.fio

[seq-write]
rw=write
numjobs=2
end_fsync=1
description=\"sequential writers\"

# the readers wait for the writers
[rand-read]
stonewall
rw=randread
runtime=2
time_based
ramp_time=500ms
random_distribution=zipf:1.2
norandommap
randseed=42
rate_iops=1000
rate_process=poisson

[mixed]
rw=randrw
rwmixwrite=30
bssplit=4k/50:64k/30:16k/
ioengine=psync
filesize=8m
size=32m
runtime=1m
fdatasync=16
startdelay=250ms
";

const EXTRA: &str = "\
# included by main.fio
ramp_time=0
group_reporting
";

fn write_files(dir: &Path) -> std::path::PathBuf {
    std::fs::write(dir.join("main.fio"), MAIN).unwrap();
    std::fs::write(dir.join("extra.fio"), EXTRA).unwrap();
    dir.join("main.fio")
}

fn agents_named<'a>(job: &'a Job, prefix: &str) -> Vec<&'a iolens_workload::AgentSpec> {
    job.agents.iter().filter(|a| a.name.starts_with(prefix)).collect()
}

#[test]
fn a_fio_job_file_becomes_the_jobs_fio_resolves() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_files(dir.path());
    let dirs = dir.path().display().to_string();
    let env = [("BS", "4k"), ("DIR", dirs.as_str())];
    for (k, v) in env {
        std::env::set_var(k, v);
    }
    let fio = load_fio_file(&path).unwrap();
    let job = &fio.job;
    assert_eq!(job.agents.len(), 4, "numjobs=2 gives two agents");

    let writers = agents_named(job, "seq-write");
    assert_eq!(writers.len(), 2);
    for w in &writers {
        assert_eq!(w.op, OpMix::Write);
        assert_eq!(w.pattern, Pattern::Sequential);
        assert_eq!(w.engine, EngineKind::IoUring);
        assert_eq!(w.queue_depth, 8);
        assert!(w.direct);
        assert_eq!(w.sizes, SizeSpec::Fixed(4096));
        assert_eq!(w.region_size, Some(16 << 20));
        assert_eq!(w.fsync, FsyncPolicy::AtEnd);
        assert_eq!(w.target, dir.path());
        assert_eq!(w.phase, 1);
        assert_eq!(w.ramp, Duration::ZERO, "the include's ramp_time=0");
    }
    let r = agents_named(job, "rand-read")[0];
    assert_eq!(r.phase, 2, "stonewall");
    assert_eq!(r.pattern, Pattern::Random(Distribution::Zipf { theta: 1.2 }));
    assert!(!r.random_map);
    assert_eq!(r.seed, 42);
    assert_eq!(r.rate.ops_per_s, 1000.0);
    assert_eq!(r.rate.arrival, iolens_workload::Arrival::Poisson);
    assert_eq!(r.termination.time, Some(Duration::from_secs(2)));
    assert_eq!(r.termination.bytes, None, "time_based runs for the runtime");
    assert_eq!(r.ramp, Duration::from_millis(500));
    let m = agents_named(job, "mixed")[0];
    assert_eq!(m.phase, 2);
    assert_eq!(m.op, OpMix::Mixed { read_pct: 70 });
    assert_eq!(m.engine, EngineKind::Sync);
    assert_eq!(m.queue_depth, 1, "fio's sync engines have one request in flight");
    assert_eq!(m.sizes, SizeSpec::Weighted(vec![(4096, 50), (65536, 30), (16384, 20)]));
    assert_eq!(m.region_size, Some(8 << 20), "filesize is the file");
    assert_eq!(m.termination.bytes, Some(32 << 20), "size is the job's total");
    assert_eq!(m.termination.time, Some(Duration::from_secs(60)));
    assert_eq!(m.fsync, FsyncPolicy::DataEveryN(16));
    assert_eq!(m.start_delay, Duration::from_millis(250));

    if !have_fio() {
        return;
    }
    let resolved = fio_resolves(&path, &env);
    let names: Vec<&str> = resolved.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["seq-write", "rand-read", "mixed"]);
    let (_, w) = &resolved[0];
    assert_eq!(num(w, "bs"), 4096);
    assert_eq!(num(w, "size"), 16 << 20);
    assert_eq!(num(w, "iodepth"), 8);
    assert_eq!(num(w, "numjobs"), writers.len() as u64);
    assert_eq!(w["ioengine"], "libaio");
    assert_eq!(w["directory"], dirs);
    let (_, r2) = &resolved[1];
    assert_eq!(num(r2, "runtime"), r.termination.time.unwrap().as_micros() as u64);
    assert_eq!(num(r2, "ramp_time"), r.ramp.as_micros() as u64);
    assert_eq!(num(r2, "rate_iops"), r.rate.ops_per_s as u64);
    assert_eq!(num(r2, "randseed"), r.seed);
    let (_, m2) = &resolved[2];
    assert_eq!(num(m2, "rwmixwrite"), 30);
    assert_eq!(num(m2, "filesize"), m.region_size.unwrap());
    assert_eq!(num(m2, "size"), m.termination.bytes.unwrap());
    assert_eq!(num(m2, "runtime"), m.termination.time.unwrap().as_micros() as u64);
    assert_eq!(num(m2, "fdatasync"), 16);
    assert_eq!(num(m2, "startdelay"), m.start_delay.as_micros() as u64);
    assert_eq!(m2["ioengine"], "psync");
}

#[test]
fn convert_prints_a_toml_job_that_parses_to_the_same_agents() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_files(dir.path());
    let dirs = dir.path().display().to_string();
    let env = |v: &str| match v {
        "BS" => Some("8k".to_string()),
        "DIR" => Some(dirs.clone()),
        _ => None,
    };
    let include = |p: &Path| std::fs::read_to_string(dir.path().join(p)).map_err(|e| e.to_string());
    let fio = parse_fio(MAIN, &path.display().to_string(), "main", &env, &include).unwrap();
    let toml = fio_to_toml(&fio, dir.path(), "main.fio");
    let back = parse_job(&toml, "main.toml").unwrap_or_else(|e| panic!("{e}\n{toml}"));
    assert_eq!(back, fio.job, "{toml}");
    assert!(toml.contains("phase = 2"), "{toml}");
    assert!(toml.contains("main.fio:"), "each key names its fio line:\n{toml}");
}

fn error_of(text: &str) -> String {
    let env = |v: &str| (v == "SET").then(|| "1".to_string());
    parse_fio(text, "bad.fio", "bad", &env, &no_includes).unwrap_err().to_string()
}

/// A misspelt fio option gets a did-you-mean, as a misspelt TOML key does, with its file, line
/// and key; an option far from every one iolens runs gets none.
#[test]
fn a_misspelt_fio_option_gets_a_did_you_mean() {
    let e = error_of("[global]\nbs=4k\n\n[j]\nfilename=/tmp/x\niodepht=8\n");
    assert!(e.starts_with("bad.fio:6:1: [j].iodepht: unknown fio option"), "{e}");
    assert!(e.contains("did you mean `iodepth`?"), "{e}");
    let e = error_of("[global]\nioengin=libaio\n[j]\nfilename=/tmp/x\n");
    assert!(
        e.contains("bad.fio:2:1") && e.contains("ioengin") && e.contains("did you mean `ioengine`?"),
        "{e}"
    );
    // fio's own aliases are suggested by the name written in fio job files too.
    let e = error_of("[j]\nfilename=/tmp/x\nblocksze=4k\n");
    assert!(e.contains("did you mean `blocksize`?"), "{e}");
    let e = error_of("[j]\nfilename=/tmp/x\nzonemode=zbd\n");
    assert!(!e.contains("did you mean"), "{e}");
}

#[test]
fn options_iolens_cannot_run_are_errors_naming_file_line_and_key() {
    let e = error_of("[global]\nbs=4k\n\n[j]\nfilename=/tmp/x\nzonemode=zbd\n");
    assert!(e.starts_with("bad.fio:6:1: [j].zonemode: fio option not supported by iolens"), "{e}");
    let e = error_of("[j]\nrw=trim\nfilename=/tmp/x\n");
    assert!(e.contains("bad.fio:2:1") && e.contains("not supported") && e.contains("trim"), "{e}");
    let e = error_of("[j]\nfilename=/tmp/${UNSET}\n");
    assert!(e.contains("bad.fio:2:1") && e.contains("${UNSET} is not set"), "{e}");
    let e = error_of("[j]\nbs=4k,8k\nfilename=/tmp/x\n");
    assert!(e.contains("[j].bs") && e.contains("reads and writes apart"), "{e}");
    let e = error_of("bs=4k\n[j]\n");
    assert!(e.contains("bad.fio:1:1") && e.contains("before any section"), "{e}");
    let e = error_of("[j]\nfilename=/tmp/x\ntime_based\n");
    assert!(e.contains("time_based without a runtime"), "{e}");
    let e = error_of("[a]\nfilename=/tmp/x\n[b]\nfilename=/tmp/y\nwait_for=c\n");
    assert!(e.contains("[b].wait_for") && e.contains("\"c\""), "{e}");
    let e = error_of("[j]\nfilename=/tmp/x\ninclude other.fio\n");
    assert!(e.contains("cannot include"), "{e}");
    let e = error_of("[j]\ntarget=/tmp/x\n");
    assert!(e.contains("iolens TOML key"), "{e}");
    let e = error_of("[global]\nbs=4k\n");
    assert!(e.contains("no job section"), "{e}");
}

#[test]
fn wait_for_and_stonewall_order_the_phases() {
    let text = "[global]\nfilename=/tmp/iolens-fio-phase-test\nsize=1m\n[a]\nrw=write\n[b]\nrw=read\nwait_for=a\n[c]\nrw=write\n[d]\nstonewall\nrw=read\n";
    let fio = parse_fio(text, "p.fio", "p", &|_| None, &no_includes).unwrap();
    let phases: Vec<(String, u32)> = fio.job.agents.iter().map(|a| (a.name.clone(), a.phase)).collect();
    assert_eq!(
        phases,
        [("a".into(), 1), ("b".into(), 2), ("c".into(), 1), ("d".into(), 3)],
        "b after a; c alongside a; d after all before it"
    );
    assert_eq!(fio.job.phase_numbers(), [1, 2, 3]);
    assert_eq!(fio.job.agents.iter().filter(|a| a.phase == 1).count(), 2);
}

#[test]
fn ranges_rates_distributions_and_verification_translate() {
    let text = "[j]\nfilename=/tmp/x\nsize=1m\nrw=randwrite\nbsrange=4k-16k\nrandom_distribution=normal:10\nbuffered=1\n\
                [v]\nfilename=/tmp/z\nsize=1m\nrw=randwrite\nbs=4k\nverify=crc32c\n\
                [k]\nfilename=/tmp/y\nsize=1m\nrw=read\nbs=64k\nrate=1m\nblockalign=64k\nrandrepeat=1\n";
    let fio = parse_fio(text, "r.fio", "r", &|_| None, &no_includes).unwrap();
    let j = &fio.job.agents[0];
    assert_eq!(j.sizes, SizeSpec::Weighted(vec![(4096, 1), (8192, 1), (12288, 1), (16384, 1)]));
    assert_eq!(j.pattern, Pattern::Random(Distribution::Normal { center: 0.5, spread: 0.1 }));
    assert!(!j.direct);
    let v = fio.job.agents[1].verify.unwrap();
    assert!(v.after_write, "fio's do_verify: a writer reads back");
    let k = &fio.job.agents[2];
    assert_eq!(k.rate.ops_per_s, 16.0, "1 MiB/s of 64 KiB requests");
    let e = error_of("[k]\nfilename=/tmp/y\nbs=64k\nblockalign=4k\n");
    assert!(e.contains("blockalign"), "{e}");
    let e = error_of("[k]\nfilename=/tmp/y\nverify=md5\n");
    assert!(e.contains("verify=md5"), "{e}");
}
