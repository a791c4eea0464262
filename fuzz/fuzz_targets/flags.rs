#![no_main]
//! The values of `iolens run` flags as typed: sizes, durations, weighted bs lists, numbers.
//! Fields are separated by 0xff (never part of UTF-8), in the order of `FIELDS`.

use iolens_workload::{parse_duration, parse_size, FlagWorkload};
use libfuzzer_sys::fuzz_target;

#[path = "../common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let fields: Vec<String> = data.split(|b| *b == 0xff).map(|f| String::from_utf8_lossy(f).into_owned()).collect();
    let get = |i: usize| fields.get(i).filter(|f| !f.is_empty()).cloned();
    let num = |i: usize| get(i).and_then(|f| f.parse::<u64>().ok());
    let float = |i: usize| get(i).and_then(|f| f.parse::<f64>().ok());
    for f in &fields {
        let _ = parse_size(f);
        let _ = parse_duration(f);
        if let Ok(n) = parse_size(f) {
            assert_eq!(parse_size(&n.to_string()), Ok(n));
        }
    }
    let flags = FlagWorkload {
        target: get(0).unwrap_or_else(|| "/fuzz".into()).into(),
        rw: get(1).unwrap_or_else(|| "randread".into()),
        bs: get(2).unwrap_or_else(|| "4k".into()),
        threads: num(3).map_or(1, |n| n as u32),
        qd: num(4).map_or(1, |n| n as u32),
        engine: get(5).unwrap_or_else(|| "null".into()),
        direct: get(6).is_some(),
        size: get(7),
        time: get(8),
        bytes: get(9),
        ramp: get(10),
        rate: float(11),
        arrival: get(12),
        fsync: get(13),
        read_pct: num(14).map(|n| n as u8),
        distribution: get(15),
        zipf_theta: float(16),
        hot_spot: float(17),
        spread: float(18),
        stride: get(19),
        pattern: get(20),
        regions: num(21),
        region_size: get(22),
        spacing: get(23),
        sieve: get(24).is_some(),
        sieve_buffer: get(25),
        random_map: get(28).and_then(|v| v.parse::<bool>().ok()),
        block_unit: get(26),
        seed: num(27),
        verify: get(28),
        verify_after_write: get(29).is_some(),
        verify_generation: num(30),
    };
    if let Ok(job) = flags.to_job() {
        common::exercise(&job);
    }
});
