//! Input an adversary would write: every case must be a clear error naming the file, line and
//! key (or the flag), never a panic, a hang or a job the engine cannot run safely.

use iolens_workload::*;

fn job(text: &str) -> Result<Job, JobError> {
    parse_job(text, "job.toml")
}

fn agent(keys: &str) -> String {
    format!("[[agent]]\ntarget = \"/tmp/x\"\n{keys}\n")
}

/// The error for `keys` in one agent table, checked to point at `key` on `line`.
fn rejected(keys: &str, line: usize, key: &str) -> JobError {
    let e = job(&agent(keys)).unwrap_err();
    assert_eq!(e.location().map(|(f, l, _)| (f, l)), Some(("job.toml", line)), "{e}");
    assert_eq!(e.key, key, "{e}");
    e
}

#[test]
fn names_with_control_characters_are_refused() {
    for bad in ["a\\u0000b", "tab\\there", "new\\nline", "del\\u007f"] {
        let e = rejected(&format!("name = \"{bad}\""), 3, "agent[1].name");
        assert!(e.to_string().contains("control character"), "{e}");
        assert!(e.hint.is_some(), "{e}");
    }
    let two = "[[agent]]\nname = \"x\\u0000\"\ntarget = \"/t\"\nthreads = 2\n";
    let e = job(two).unwrap_err();
    assert_eq!((e.key.as_str(), e.location().unwrap().1), ("agent[1].name", 2), "{e}");
    let e = job(&format!("name = \"j\\u0000\"\n{}", agent(""))).unwrap_err();
    assert_eq!((e.key.as_str(), e.location().unwrap().1), ("name", 1), "{e}");
    assert!(e.to_string().contains("control character"), "{e}");
}

#[test]
fn targets_with_a_nul_byte_are_refused() {
    let e = job("[[agent]]\ntarget = \"/tmp/a\\u0000b\"\n").unwrap_err();
    assert_eq!((e.key.as_str(), e.location().unwrap().1), ("agent[1].target", 2), "{e}");
    let e = FlagWorkload { target: "/tmp/a\0b".into(), ..FlagWorkload::default() }.to_job().unwrap_err();
    assert_eq!(e.source, ErrorSource::Flag("--target".into()));
}

#[test]
fn names_with_path_separators_or_absurd_lengths_are_refused() {
    let e = rejected("name = \"../../etc/passwd\"", 3, "agent[1].name");
    assert!(e.to_string().contains('/'), "{e}");
    let e = job(&format!("name = \"a/b\"\n{}", agent(""))).unwrap_err();
    assert_eq!(e.key, "name", "{e}");
    let long = "n".repeat(101);
    let e = rejected(&format!("name = \"{long}\""), 3, "agent[1].name");
    assert!(e.to_string().contains("100"), "{e}");
    assert!(job(&agent(&format!("name = \"{}\"", "n".repeat(100)))).is_ok());
    // The file's stem names the job when the file does not: it cannot be refused, so it is cleaned.
    let j = parse_job(&agent(""), "/tmp/we\u{1}ird\nname.toml").unwrap();
    assert!(!j.name.chars().any(char::is_control), "{:?}", j.name);
}

#[test]
fn flag_threads_name_the_flag() {
    let e = FlagWorkload { threads: 5000, ..FlagWorkload::default() }.to_job().unwrap_err();
    assert_eq!(e.source, ErrorSource::Flag("--threads".into()));
    assert!(e.to_string().contains("1024"), "{e}");
}

#[test]
fn tiny_huge_and_non_finite_rates_are_refused() {
    for bad in ["1e-12", "1e-300", "5e-324", "0.0001", "1e10", "1e300"] {
        let e = rejected(&format!("rate = {bad}"), 3, "agent[1].rate");
        assert!(e.hint.as_deref().is_some_and(|h| h.contains("0.001")), "{bad}: {e}");
    }
    for bad in ["nan", "inf", "-inf", "-1.0"] {
        rejected(&format!("rate = {bad}"), 3, "agent[1].rate");
    }
    let e = FlagWorkload { rate: Some(1e-12), ..FlagWorkload::default() }.to_job().unwrap_err();
    assert_eq!(e.source, ErrorSource::Flag("--rate".into()));
    // Zero is the documented way to say "as fast as possible".
    assert_eq!(job(&agent("rate = 0")).unwrap().agents[0].rate, Rate::UNLIMITED);
    assert_eq!(job(&agent("rate = 0.001")).unwrap().agents[0].rate.ops_per_s, 0.001);
}

#[test]
fn agent_counts_are_capped() {
    let e = rejected("engine = \"null\"\nthreads = 4096", 4, "agent[1].threads");
    assert!(e.to_string().contains("1024") && e.hint.is_some(), "{e}");
    assert_eq!(job(&agent("threads = 1024")).unwrap().agents.len(), 1024);
    // Many tables of many threads add up.
    let text = format!("{}{}", agent("name = \"a\"\nthreads = 600"), agent("name = \"b\"\nthreads = 600"));
    let e = job(&text).unwrap_err();
    assert!(e.to_string().contains("1024") && e.hint.is_some(), "{e}");
    assert_eq!(e.location().unwrap().1, 8, "points at the agent that goes over: {e}");
}

#[test]
fn noncontig_parameters_must_fit_the_region() {
    let nc = "rw = \"read\"\npattern = \"noncontig\"\nregion_size = 8\nsize = \"1m\"";
    let e = rejected(&format!("{nc}\nregions = 1000000000"), 7, "agent[1].regions");
    assert!(e.hint.is_some(), "{e}");
    let e = rejected(&format!("{nc}\nregions = 200000"), 7, "agent[1].regions");
    assert!(e.to_string().contains("region"), "an access wider than the 1MiB region: {e}");
    // Products that overflow u64 are errors, not wrapped values.
    let e = rejected(
        "rw = \"read\"\npattern = \"noncontig\"\nregion_size = \"4t\"\nspacing = \"8000000t\"\nregions = 4096",
        7,
        "agent[1].regions",
    );
    assert!(e.hint.is_some(), "{e}");
    let flags = FlagWorkload {
        rw: "read".into(),
        pattern: Some("noncontig".into()),
        regions: Some(1_000_000_000),
        region_size: Some("8".into()),
        size: Some("1m".into()),
        ..FlagWorkload::default()
    };
    let e = flags.to_job().unwrap_err();
    assert_eq!(e.source, ErrorSource::Flag("--regions".into()), "{e}");
    // What fits is fine: 4 regions of 8 bytes 24 apart span 104 bytes.
    let ok = job(&agent(&format!("{nc}\nregions = 4\nspacing = 24"))).unwrap();
    let Pattern::Noncontiguous(n) = ok.agents[0].pattern else { panic!("noncontig") };
    assert_eq!(n.span(), 104);
}

#[test]
fn spans_never_overflow() {
    let n = Noncontiguous { regions: u64::MAX, region_size: u64::MAX, spacing: u64::MAX, sieve_buffer: None };
    assert_eq!(n.checked_span(), None);
    assert_eq!(n.span(), u64::MAX);
    let zero = Noncontiguous { regions: 0, region_size: 8, spacing: 8, sieve_buffer: Some(64) };
    assert_eq!(zero.span(), 0);
    assert_eq!(zero.max_call(), 8);
}

#[test]
fn sizes_beyond_a_file_offset_are_refused() {
    let i64_max = i64::MAX as u64;
    for key in ["size", "bytes", "stride"] {
        let rw = if key == "stride" { "rw = \"read\"\n" } else { "" };
        let line = if key == "stride" { 4 } else { 3 };
        let e = rejected(&format!("{rw}{key} = \"{}\"", i64_max + 1), line, &format!("agent[1].{key}"));
        assert!(e.to_string().contains("too large"), "{key}: {e}");
        assert!(e.hint.is_some(), "{key}: {e}");
    }
    let e = job(&format!("block_unit = \"16777215t\"\n{}", agent(""))).unwrap_err();
    assert_eq!(e.key, "block_unit", "{e}");
    assert!(job(&agent(&format!("size = {}", i64::MAX))).is_ok());
}

#[test]
fn sums_over_agents_are_checked() {
    let big = i64::MAX;
    let text = format!(
        "{}{}",
        agent(&format!("name = \"a\"\nsize = {big}")),
        agent(&format!("name = \"b\"\nsize = {big}"))
    );
    let e = job(&text).unwrap_err();
    assert!(e.to_string().contains("together"), "{e}");
    assert_eq!((e.key.as_str(), e.location().unwrap().1), ("agent[2].size", 8), "{e}");
    let e = job(&agent(&format!("bytes = {big}\nthreads = 2"))).unwrap_err();
    assert_eq!(e.key, "agent[1].bytes", "{e}");
}

#[test]
fn request_buffers_are_bounded() {
    let e = rejected("engine = \"io_uring\"\nqd = 4096\nbs = \"2g\"", 5, "agent[1].bs");
    assert!(e.to_string().contains("buffers") && e.hint.is_some(), "{e}");
    let e = rejected("engine = \"io_uring\"\nqd = 4096\nbs = \"16m\"\nthreads = 1024", 5, "agent[1].bs");
    assert!(e.to_string().contains("buffers"), "{e}");
}

#[test]
fn absurd_durations_are_refused() {
    for (text, key) in
        [("time = \"99999999999h\"", "time"), ("ramp = 1e18", "ramp"), ("time = 1e300", "time")]
    {
        let e = rejected(text, 3, &format!("agent[1].{key}"));
        assert!(e.hint.is_some(), "{text}: {e}");
    }
    let e = FlagWorkload { time: Some("999999999h".into()), ..FlagWorkload::default() }.to_job().unwrap_err();
    assert_eq!(e.source, ErrorSource::Flag("--time".into()));
}

#[test]
fn flag_messages_speak_in_flags() {
    let e = FlagWorkload { qd: 0, ..FlagWorkload::default() }.to_job().unwrap_err();
    assert!(e.to_string().starts_with("--qd: --qd must be at least 1"), "{e}");
    let e = FlagWorkload {
        regions: Some(0),
        pattern: Some("noncontig".into()),
        rw: "read".into(),
        ..Default::default()
    }
    .to_job()
    .unwrap_err();
    assert!(!e.to_string().contains(" regions must"), "no bare key names in flag errors: {e}");
}

#[test]
fn job_files_that_are_not_regular_files_are_refused_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let e = load_job_file(dir.path()).unwrap_err();
    assert!(e.to_string().contains("not a job file"), "{e}");
    let fifo = dir.path().join("job.toml");
    let status = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(status.success());
    let e = load_job_file(&fifo).unwrap_err();
    assert!(e.to_string().contains("not a job file"), "{e}");
}

#[test]
fn distribution_shapes_are_bounded() {
    let e = rejected("distribution = \"normal\"\nspread = 1e308", 4, "agent[1].spread");
    assert!(e.hint.is_some(), "{e}");
    let e = rejected("distribution = \"zipf\"\nzipf_theta = 1e300", 4, "agent[1].zipf_theta");
    assert!(e.hint.is_some(), "{e}");
    assert!(job(&agent("distribution = \"normal\"\nspread = 2")).is_ok());
}

#[test]
fn tiny_values_are_shown_short() {
    let e = rejected("rate = 5e-324", 3, "agent[1].rate");
    assert!(e.message.starts_with("rate = 5e-324 "), "{e}");
}
