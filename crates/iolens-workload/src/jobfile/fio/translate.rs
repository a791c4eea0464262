//! One fio job section translated into iolens settings, one settings group at a time (target,
//! read/write mix, request sizes, engine, how much and how long, rate, sync policy, randomness,
//! verification and phase). Each group reads the section's last values and writes its settings
//! into a [`Translation`], in the order fio's options are checked, so the first error a job
//! reports does not depend on how the translation is split.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::values::{fio_duration, fio_size, fio_uint, flag, one_for_both, unsupported};
use super::{job_name, last_values, FioOption, FioSection, TranslatedJob, DEFAULT_MARK, MAX_RANGE_SIZES};
use crate::jobfile::{JobError, Raw, Setting};

/// The last value of each (alias-folded) option of a section.
type Values<'s> = BTreeMap<&'static str, &'s FioOption>;

/// The iolens settings of one section as they are translated: the section's name (for error
/// keys and setting paths) and the settings so far, in a stable order.
struct Translation<'s> {
    sec: &'s str,
    settings: Vec<(String, Setting)>,
}

impl Translation<'_> {
    /// Sets `key` from the fio option `from`; a later setting of the same key replaces it.
    fn put(&mut self, key: &str, value: Raw, from: &FioOption) {
        let setting = Setting { value, source: from.source(), path: format!("[{}].{}", self.sec, from.key) };
        self.settings.retain(|(k, _)| k != key);
        self.settings.push((key.to_string(), setting));
    }
}

pub(super) fn translate(section: &FioSection, phase: u32) -> Result<TranslatedJob, JobError> {
    let name = job_name(section).to_string();
    let v = last_values(section)?;
    let mut out = Translation { sec: section.name.as_str(), settings: Vec::new() };

    let section_header = FioOption {
        key: "section".into(),
        value: None,
        file: section.file.clone(),
        line: section.line,
        column: 1,
    };
    out.put("name", Raw::Str(name.clone()), v.get("name").copied().unwrap_or(&section_header));

    // `header` stands for what fio does without the option.
    let header = FioOption {
        key: DEFAULT_MARK.into(),
        value: None,
        file: section.file.clone(),
        line: section.line,
        column: 1,
    };
    target(&v, &mut out, &header)?;
    let rw = read_write(&v, &mut out, &header)?;
    let fixed_size = request_sizes(&v, &mut out)?;
    engine(&v, &mut out, &header)?;
    amount_and_time(&v, &mut out)?;
    rate(&v, &mut out, fixed_size)?;
    sync_policy(&v, &mut out)?;
    randomness(&v, &mut out, rw)?;
    verification(&v, &mut out, rw)?;
    let sec = out.sec;
    for key in ["new_group", "group_reporting"] {
        if let Some(o) = v.get(key) {
            flag(o, sec)?; // iolens reports every agent and the total anyway
        }
    }
    if phase > 1 {
        let from = v.get("stonewall").or(v.get("wait_for")).copied().unwrap_or(&header);
        out.put("phase", Raw::Int(phase.into()), from);
    }
    let description = v.get("description").map(|o| o.text().trim_matches('"').to_string());
    Ok(TranslatedJob { name, description, settings: out.settings })
}

/// Target: directory and file name as fio joins them; without a file name, a file of
/// iolens's own in the directory (fio would name it JOB.N.0).
fn target(v: &Values, out: &mut Translation, header: &FioOption) -> Result<(), JobError> {
    let sec = out.sec;
    let dir = v.get("directory");
    let file = v.get("filename");
    for o in [dir, file].into_iter().flatten() {
        if o.text().contains(':') && !o.text().starts_with("/dev/") {
            return Err(unsupported(o, sec, "several files or directories per job", "give one path"));
        }
    }
    let target = match (dir, file) {
        (Some(d), Some(f)) => (Path::new(d.text()).join(f.text()), *f),
        (None, Some(f)) => (PathBuf::from(f.text()), *f),
        (Some(d), None) => (PathBuf::from(d.text()), *d),
        (None, None) => (PathBuf::from("."), header),
    };
    out.put("target", Raw::Str(target.0.display().to_string()), target.1);
    Ok(())
}

/// The read/write pattern (fio's default: sequential reads) and the read share of a mixed job;
/// returns the pattern as fio spells it.
fn read_write<'s>(v: &Values<'s>, out: &mut Translation, header: &FioOption) -> Result<&'s str, JobError> {
    let sec = out.sec;
    let rw = match v.get("rw") {
        Some(o) => {
            let text = o.text().trim();
            if text.contains(':') {
                return Err(unsupported(
                    o,
                    sec,
                    &format!("rw={text} (skips between requests)"),
                    "drop the :N suffix",
                ));
            }
            match text {
                "read" | "write" | "randread" | "randwrite" | "randrw" => text,
                "rw" | "readwrite" => "rw",
                t if t.contains("trim") => {
                    return Err(unsupported(
                        o,
                        sec,
                        &format!("rw={t}"),
                        "iolens reads and writes; it does not trim",
                    ))
                }
                t => {
                    return Err(o.error(
                        sec,
                        format!("unknown rw value {t:?}"),
                        Some("read, write, randread, randwrite, rw, randrw".into()),
                    ))
                }
            };
            out.put("rw", Raw::Str(text.replace("readwrite", "rw")), o);
            text
        }
        None => "read", // fio's default
    };
    if !v.contains_key("rw") {
        out.put("rw", Raw::Str("read".into()), header);
    }
    let mixed = matches!(rw, "rw" | "readwrite" | "randrw");
    if mixed {
        match (v.get("rwmixread"), v.get("rwmixwrite")) {
            (Some(o), _) => out.put("read_pct", Raw::Int(fio_uint(o, sec)?.into()), o),
            (None, Some(o)) => {
                let w = fio_uint(o, sec)?;
                if w > 100 {
                    return Err(o.error(sec, "a percentage from 0 to 100", None));
                }
                out.put("read_pct", Raw::Int((100 - w).into()), o)
            }
            // fio mixes half and half by default.
            (None, None) => out.put("read_pct", Raw::Int(50), header),
        }
    }
    Ok(rw)
}

/// Request sizes: bssplit over bsrange over bs, as fio picks them, and the alignment that must
/// match the smallest; returns the one request size, if there is only one.
fn request_sizes(v: &Values, out: &mut Translation) -> Result<Option<u64>, JobError> {
    let sec = out.sec;
    let mut min_size = 4096u64;
    let mut fixed_size = Some(4096u64);
    if let Some(o) = v.get("bssplit") {
        let text = one_for_both(o, sec)?;
        let entries: Vec<&str> = text.split(':').map(str::trim).filter(|e| !e.is_empty()).collect();
        let mut list: Vec<(u64, Option<u64>)> = Vec::new();
        for e in entries {
            let (size, pct) = match e.split_once('/') {
                Some((s, p)) => (s, Some(p.trim())),
                None => (e, None),
            };
            let size = fio_size(o, size, sec)?;
            let pct = match pct.filter(|p| !p.is_empty()) {
                Some(p) => Some(p.parse::<u64>().ok().filter(|p| *p <= 100).ok_or_else(|| {
                    o.error(
                        sec,
                        format!("{p:?} is not a percentage"),
                        Some("e.g. bssplit=4k/70:64k/30".into()),
                    )
                })?),
                None => None,
            };
            list.push((size, pct));
        }
        let given: u64 = list.iter().filter_map(|(_, p)| *p).sum();
        if list.is_empty() || given > 100 {
            return Err(o.error(
                sec,
                "the shares of a bssplit add up to more than 100%",
                Some("e.g. bssplit=4k/70:64k/30".into()),
            ));
        }
        // fio splits what is left evenly among entries without a share.
        let open = list.iter().filter(|(_, p)| p.is_none()).count() as u64;
        let each = (100 - given).checked_div(open).unwrap_or(0);
        let weighted: Vec<String> = list.iter().map(|(s, p)| format!("{s}:{}", p.unwrap_or(each))).collect();
        min_size = list.iter().map(|(s, _)| *s).min().unwrap_or(4096);
        fixed_size = (list.len() == 1).then_some(min_size);
        out.put("bs", Raw::Str(weighted.join(",")), o);
    } else if let Some(o) = v.get("bsrange") {
        let text = one_for_both(o, sec)?;
        let (lo, hi) = text.split_once(['-', ':']).ok_or_else(|| {
            o.error(sec, format!("{text:?} is not a range"), Some("e.g. bsrange=4k-64k".into()))
        })?;
        let (lo, hi) = (fio_size(o, lo, sec)?, fio_size(o, hi, sec)?);
        if lo == 0 || lo > hi {
            return Err(o.error(
                sec,
                "the range's low end must be positive and not above its high end",
                None,
            ));
        }
        // fio draws uniformly among the multiples of the low end.
        let count = hi / lo;
        if count > MAX_RANGE_SIZES {
            return Err(o.error(
                sec,
                format!("the range holds {count} sizes; iolens takes at most {MAX_RANGE_SIZES}"),
                Some("narrow it or use bssplit".into()),
            ));
        }
        let list: Vec<String> = (1..=count).map(|k| format!("{}:1", k * lo)).collect();
        min_size = lo;
        fixed_size = (count == 1).then_some(lo);
        out.put("bs", Raw::Str(list.join(",")), o);
    } else if let Some(o) = v.get("bs") {
        let size = fio_size(o, one_for_both(o, sec)?, sec)?;
        min_size = size;
        fixed_size = Some(size);
        out.put("bs", Raw::Int(size.into()), o);
    }
    if let Some(o) = v.get("blockalign") {
        let align = fio_size(o, one_for_both(o, sec)?, sec)?;
        if align != min_size {
            return Err(unsupported(
                o,
                sec,
                &format!("blockalign={} (other than the smallest request, {min_size})", o.text()),
                "iolens aligns requests to the smallest request size; drop blockalign",
            ));
        }
    }
    Ok(fixed_size)
}

/// The I/O engine (fio's default: psync), queue depth, direct I/O and thread count.
fn engine(v: &Values, out: &mut Translation, header: &FioOption) -> Result<(), JobError> {
    let sec = out.sec;
    let engine = match v.get("ioengine") {
        Some(o) => {
            let e = match o.text().trim() {
                "sync" | "psync" | "pvsync" => "sync",
                "libaio" | "io_uring" | "posixaio" => "io_uring",
                "null" => "null",
                other => {
                    return Err(unsupported(o, sec, &format!("ioengine={other}"), "iolens runs sync, psync, pvsync (as sync), libaio, io_uring, posixaio (as io_uring) and null"))
                }
            };
            out.put("engine", Raw::Str(e.into()), o);
            e
        }
        None => {
            out.put("engine", Raw::Str("sync".into()), header); // fio's default, psync
            "sync"
        }
    };
    // fio's synchronous engines have one request in flight whatever iodepth says.
    if let (Some(o), "io_uring") = (v.get("iodepth"), engine) {
        out.put("qd", Raw::Int(fio_uint(o, sec)?.into()), o);
    }
    match (v.get("direct"), v.get("buffered")) {
        (Some(d), Some(b)) if flag(d, sec)? == flag(b, sec)? => {
            return Err(d.error(
                sec,
                "direct and buffered contradict each other",
                Some("give one of them".into()),
            ))
        }
        (Some(o), _) => out.put("direct", Raw::Bool(flag(o, sec)?), o),
        (None, Some(o)) => out.put("direct", Raw::Bool(!flag(o, sec)?), o),
        (None, None) => {}
    }
    if let Some(o) = v.get("numjobs") {
        out.put("threads", Raw::Int(fio_uint(o, sec)?.into()), o);
    }
    Ok(())
}

/// How much and how long: fio moves `size` (or the file) once, stopping early at `runtime`;
/// `time_based` keeps going until `runtime`. Also the ramp and the start delay.
fn amount_and_time(v: &Values, out: &mut Translation) -> Result<(), JobError> {
    let sec = out.sec;
    let region = v.get("filesize").or(v.get("size"));
    if let Some(o) = region {
        out.put("size", Raw::Int(fio_size(o, o.text(), sec)?.into()), o);
    }
    let time_based = match v.get("time_based") {
        Some(o) => flag(o, sec)?,
        None => false,
    };
    match (v.get("runtime"), time_based) {
        (Some(o), _) => {
            out.put("time", Raw::Str(fio_duration(o, sec)?), o);
            if !time_based {
                if let (Some(total), Some(_)) = (v.get("size"), v.get("filesize")) {
                    out.put("bytes", Raw::Int(fio_size(total, total.text(), sec)?.into()), total);
                } else if let Some(o) = region {
                    out.put("bytes", Raw::Int(fio_size(o, o.text(), sec)?.into()), o);
                }
            }
        }
        (None, true) => {
            let o = v["time_based"];
            return Err(o.error(sec, "time_based without a runtime", Some("add runtime=30s".into())));
        }
        (None, false) => {
            if let (Some(total), Some(_)) = (v.get("size"), v.get("filesize")) {
                out.put("bytes", Raw::Int(fio_size(total, total.text(), sec)?.into()), total);
            }
        }
    }
    if let Some(o) = v.get("ramp_time") {
        out.put("ramp", Raw::Str(fio_duration(o, sec)?), o);
    }
    if let Some(o) = v.get("startdelay") {
        if o.text().contains('-') {
            return Err(unsupported(o, sec, "a random start delay range", "give one delay"));
        }
        out.put("start_delay", Raw::Str(fio_duration(o, sec)?), o);
    }
    Ok(())
}

/// The rate limit (in bytes/s, which needs one request size, or in requests/s) and how
/// requests arrive under it.
fn rate(v: &Values, out: &mut Translation, fixed_size: Option<u64>) -> Result<(), JobError> {
    let sec = out.sec;
    match (v.get("rate"), v.get("rate_iops")) {
        (Some(o), Some(_)) => {
            return Err(o.error(sec, "rate and rate_iops are both set", Some("give one of them".into())))
        }
        (Some(o), None) => {
            let bytes_per_s = fio_size(o, one_for_both(o, sec)?, sec)?;
            let Some(bs) = fixed_size else {
                return Err(unsupported(
                    o,
                    sec,
                    "a rate in bytes/s with several request sizes",
                    "use rate_iops",
                ));
            };
            out.put("rate", Raw::Float(bytes_per_s as f64 / bs as f64), o);
        }
        (None, Some(o)) => {
            let iops = one_for_both(o, sec)?;
            let n = iops
                .parse::<u64>()
                .map_err(|_| o.error(sec, format!("{iops:?} is not a whole number"), None))?;
            out.put("rate", Raw::Float(n as f64), o);
        }
        (None, None) => {}
    }
    if let Some(o) = v.get("rate_process") {
        let arrival = match o.text().trim() {
            "linear" => "constant",
            "poisson" => "poisson",
            other => {
                return Err(o.error(
                    sec,
                    format!("unknown rate_process {other:?}"),
                    Some("linear or poisson".into()),
                ))
            }
        };
        if v.contains_key("rate") || v.contains_key("rate_iops") {
            out.put("arrival", Raw::Str(arrival.into()), o);
        }
    }
    Ok(())
}

/// The one sync policy iolens takes: fsync or fdatasync every N writes, or fsync at the end.
fn sync_policy(v: &Values, out: &mut Translation) -> Result<(), JobError> {
    let sec = out.sec;
    let end_fsync = match v.get("end_fsync") {
        Some(o) => flag(o, sec)?.then_some(*o),
        None => None,
    };
    let every = |o: &FioOption| fio_uint(o, sec).map(|n| (n > 0).then_some(n));
    let fsync = match v.get("fsync") {
        Some(o) => every(o)?.map(|n| (n, *o)),
        None => None,
    };
    let fdatasync = match v.get("fdatasync") {
        Some(o) => every(o)?.map(|n| (n, *o)),
        None => None,
    };
    match (fsync, fdatasync, end_fsync) {
        (Some(_), Some((_, o)), _) | (Some(_), _, Some(o)) | (_, Some(_), Some(o)) => {
            return Err(unsupported(
                o,
                sec,
                "several sync policies in one job",
                "iolens takes one: fsync, fdatasync or end_fsync",
            ))
        }
        (Some((n, o)), None, None) => out.put("fsync", Raw::Int(n.into()), o),
        (None, Some((n, o)), None) => out.put("fdatasync", Raw::Int(n.into()), o),
        (None, None, Some(o)) => out.put("fsync", Raw::Str("end".into()), o),
        (None, None, None) => {}
    }
    Ok(())
}

/// Where random requests land (distribution, random map) and the seed that repeats them.
fn randomness(v: &Values, out: &mut Translation, rw: &str) -> Result<(), JobError> {
    let sec = out.sec;
    let random = rw.starts_with("rand");
    if let (Some(o), true) = (v.get("random_distribution"), random) {
        let text = o.text().trim();
        let (kind, params) = match text.split_once(':') {
            Some((k, p)) => (k, Some(p)),
            None => (text, None),
        };
        let number = |p: Option<&str>| -> Result<f64, JobError> {
            let p = p.ok_or_else(|| {
                o.error(sec, format!("{kind} needs a parameter"), Some(format!("e.g. {kind}:1.2")))
            })?;
            if p.contains(':') {
                return Err(unsupported(
                    o,
                    sec,
                    "a distribution centre",
                    "iolens centres normal at the middle and zipf at the start",
                ));
            }
            p.trim().parse::<f64>().map_err(|_| o.error(sec, format!("{p:?} is not a number"), None))
        };
        match kind {
            "random" => out.put("distribution", Raw::Str("uniform".into()), o),
            "zipf" => {
                out.put("distribution", Raw::Str("zipf".into()), o);
                out.put("zipf_theta", Raw::Float(number(params)?), o);
            }
            "normal" | "gauss" => {
                out.put("distribution", Raw::Str("normal".into()), o);
                out.put("hot_spot", Raw::Float(0.5), o);
                out.put("spread", Raw::Float(number(params)? / 100.0), o);
            }
            other => {
                return Err(unsupported(
                    o,
                    sec,
                    &format!("random_distribution={other}"),
                    "iolens has random, zipf:θ and normal:P",
                ))
            }
        }
    }
    if let (Some(o), true) = (v.get("norandommap"), random) {
        if flag(o, sec)? {
            out.put("random_map", Raw::Bool(false), o);
        }
    }
    match (v.get("randseed"), v.get("randrepeat")) {
        (Some(o), _) => out.put("seed", Raw::Int(fio_uint(o, sec)?.into()), o),
        (None, Some(o)) if !flag(o, sec)? => {
            // Not repeatable: a seed of this run's own, written out so the run can be repeated.
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
            out.put("seed", Raw::Int((now.as_nanos() as u64).into()), o);
        }
        _ => {}
    }
    Ok(())
}

/// Data verification, and the read-back a writing job does when done.
fn verification(v: &Values, out: &mut Translation, rw: &str) -> Result<(), JobError> {
    let sec = out.sec;
    if let Some(o) = v.get("verify") {
        let kind = match o.text().trim() {
            "0" | "" => None,
            "crc32c" | "crc32c-intel" => Some("crc32c"),
            "xxhash" => Some("xxh3"),
            "pattern" => Some("pattern"),
            other => {
                return Err(unsupported(
                    o,
                    sec,
                    &format!("verify={other}"),
                    "iolens verifies with crc32c, xxhash (as xxh3) or pattern",
                ))
            }
        };
        if let Some(kind) = kind {
            out.put("verify", Raw::Str(kind.into()), o);
            if matches!(rw, "write" | "randwrite") {
                // fio's do_verify=1: a writing job reads its blocks back when done.
                out.put("verify_after_write", Raw::Bool(true), o);
            }
        }
    }
    Ok(())
}
