//! Flags and job files go through one builder: any flag combination gives the same job, or the
//! same error, as the equivalent `[[agent]]` table.

use iolens_workload::*;
use proptest::prelude::*;

/// The job file equivalent to `f`: every flag becomes the key of the same name.
fn as_job_file(f: &FlagWorkload) -> String {
    let mut lines = vec!["name = \"run\"".to_string()];
    if let Some(b) = &f.block_unit {
        lines.push(format!("block_unit = {b:?}"));
    }
    lines.push("[[agent]]".into());
    lines.push("name = \"agent\"".into());
    lines.push(format!("target = {:?}", f.target.display().to_string()));
    for (k, v) in [("rw", &f.rw), ("bs", &f.bs), ("engine", &f.engine)] {
        lines.push(format!("{k} = {v:?}"));
    }
    lines.push(format!("threads = {}\nqd = {}\ndirect = {}", f.threads, f.qd, f.direct));
    let strings = [
        ("size", &f.size),
        ("time", &f.time),
        ("bytes", &f.bytes),
        ("ramp", &f.ramp),
        ("arrival", &f.arrival),
        ("fsync", &f.fsync),
        ("distribution", &f.distribution),
        ("stride", &f.stride),
    ];
    lines.extend(strings.iter().filter_map(|(k, v)| v.as_ref().map(|v| format!("{k} = {v:?}"))));
    let floats =
        [("rate", f.rate), ("zipf_theta", f.zipf_theta), ("hot_spot", f.hot_spot), ("spread", f.spread)];
    lines.extend(floats.iter().filter_map(|(k, v)| v.map(|v| format!("{k} = {v:?}"))));
    lines.extend(f.read_pct.map(|p| format!("read_pct = {p}")));
    lines.extend(f.seed.map(|s| format!("seed = {s}")));
    lines.extend(f.random_map.map(|m| format!("random_map = {m}")));
    lines.join("\n") + "\n"
}

/// Mostly valid values, sometimes a bad one: both paths must reject it the same way.
fn pick<T: Clone + std::fmt::Debug + 'static>(good: &'static [T], bad: &'static [T]) -> BoxedStrategy<T> {
    if bad.is_empty() {
        return proptest::sample::select(good).boxed();
    }
    prop_oneof![12 => proptest::sample::select(good), 1 => proptest::sample::select(bad)].boxed()
}

fn text(good: &'static [&'static str], bad: &'static [&'static str]) -> BoxedStrategy<String> {
    pick(good, bad).prop_map(str::to_string).boxed()
}

/// An optional flag, usually absent.
fn maybe<T: std::fmt::Debug>(s: BoxedStrategy<T>) -> impl Strategy<Value = Option<T>> {
    proptest::option::weighted(0.25, s)
}

fn flags() -> impl Strategy<Value = FlagWorkload> {
    let core = (
        text(&["read", "write", "randread", "randwrite", "rw", "randrw", "readwrite"], &["bogus"]),
        text(&["4k", "512", "1000", "4k:70,64k:30", "1m"], &["0", "4q"]),
        pick(&[1u32, 1, 2, 3], &[0]),
        pick(&[1u32, 1, 8], &[0]),
        text(&["sync", "io_uring", "null"], &["iouring"]),
        any::<bool>(),
        maybe(prop_oneof![12 => 0u8..=100, 1 => 101u8..=255].boxed()),
        maybe((0u64..=i64::MAX as u64).boxed()),
        maybe(any::<bool>().boxed()),
    );
    let amounts = (
        maybe(text(&["1g", "3k", "2000"], &["0"])),
        maybe(text(&["10s", "1.5m"], &["0", "x"])),
        maybe(text(&["1g"], &["0"])),
        maybe(text(&["2s"], &["-1s"])),
        maybe(text(&["512", "4k"], &["0"])),
    );
    let shape = (
        maybe(pick(&[0.0, 100.0], &[-1.0])),
        maybe(text(&["constant", "poisson"], &["burst"])),
        maybe(text(&["none", "end", "8"], &["0", "always"])),
        maybe(text(&["uniform", "normal", "zipf"], &["gauss"])),
        maybe(pick(&[1.1], &[0.0])),
        maybe(pick(&[0.3], &[1.5])),
        maybe(pick(&[0.1], &[-0.1])),
        maybe(text(&["64k", "1000"], &["0"])),
    );
    (core, amounts, shape).prop_map(
        |(
            (rw, bs, threads, qd, engine, direct, read_pct, seed, random_map),
            (size, time, bytes, ramp, block_unit),
            (rate, arrival, fsync, distribution, zipf_theta, hot_spot, spread, stride),
        )| FlagWorkload {
            target: "/scratch".into(),
            rw,
            bs,
            threads,
            qd,
            engine,
            direct,
            size,
            time,
            bytes,
            ramp,
            rate,
            arrival,
            fsync,
            read_pct,
            distribution,
            zipf_theta,
            hot_spot,
            spread,
            stride,
            block_unit,
            seed,
            random_map,
            ..FlagWorkload::default()
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn flags_and_job_files_agree(f in flags()) {
        let text = as_job_file(&f);
        match (f.to_job(), parse_job(&text, "job.toml")) {
            (Ok(from_flags), Ok(from_file)) => {
                prop_assert_eq!(from_flags.block_unit, from_file.block_unit);
                prop_assert_eq!(from_flags.agents.len(), from_file.agents.len());
                for (a, b) in from_flags.agents.iter().zip(&from_file.agents) {
                    prop_assert_eq!(&AgentSpec { name: b.name.clone(), ..a.clone() }, b);
                }
            }
            (Err(fe), Err(je)) => {
                let flag = format!("--{}", fe.key.replace('_', "-"));
                prop_assert_eq!(&fe.source, &ErrorSource::Flag(flag.clone()));
                let file_key = if fe.key == "block_unit" { fe.key.clone() } else { format!("agent[1].{}", fe.key) };
                prop_assert_eq!(&je.key, &file_key, "{}\n{}", fe, je);
                // A flag's message names the flag where a file's names the key.
                prop_assert_eq!(&fe.message.replace(&flag, &fe.key), &je.message);
            }
            (a, b) => prop_assert!(false, "flags: {:?}\nfile: {:?}\n{}", a, b, text),
        }
    }
}
