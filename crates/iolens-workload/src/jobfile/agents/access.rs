//! How an agent accesses its target: the operation, the access pattern (with the noncontig
//! regions and the random distributions), the random map and the request sizes.

use super::super::settings::*;
use super::Reader;
use crate::model::limits::*;
use crate::model::*;
use crate::units::format_bytes;

/// A setting's value and the setting it came from, when it was given.
type Given<'a, T> = Option<(T, &'a Setting)>;

/// The operation (`rw`, or `op` with `read_pct`) and the access order `rw` or `pattern` chose.
pub(super) fn operation<'a>(r: &Reader<'a>) -> Result<(OpMix, Given<'a, &'a str>), JobError> {
    // Operation and pattern: `rw` (fio's shorthand) or `op` + `pattern`.
    let rw = r.choice("rw", RW_VALUES)?;
    let rw_op = rw.map(|(v, s)| {
        let op = match v.trim_start_matches("rand") {
            "read" => "read",
            "write" => "write",
            _ => "mix",
        };
        (op, s)
    });
    let rw_pattern = rw.map(|(v, s)| (if v.starts_with("rand") { "random" } else { "sequential" }, s));
    let op = r.pick(r.choice("op", OP_VALUES)?, rw_op, |given, implied| given == implied)?;
    let pattern = r.pick(r.choice("pattern", PATTERN_VALUES)?, rw_pattern, |given, implied| {
        // A noncontig access places its own calls, so it fits either access order rw implies.
        given == implied || given == "noncontig" || (given == "strided" && implied == "sequential")
    })?;

    let read_pct = match r.uint("read_pct")? {
        Some((p, s)) if p > 100 => {
            return Err(r.err(
                s,
                format!("read_pct = {p} is not a percentage"),
                Some("give 0 to 100: the share of reads in a read/write mix".into()),
            ))
        }
        found => found.map_or(50, |(p, _)| p as u8),
    };
    let op = match op.map_or("read", |(v, _)| v) {
        "read" => OpMix::Read,
        "write" => OpMix::Write,
        _ => OpMix::Mixed { read_pct },
    };
    Ok((op, pattern))
}

/// The access pattern: sequential, strided (`stride`), noncontig, or random with its
/// distribution (`hot_spot`, `spread`, `zipf_theta`); also the distribution and stride as given.
pub(super) fn access_pattern<'a>(
    r: &Reader<'a>,
    pattern: Given<'a, &'a str>,
) -> Result<(Pattern, Given<'a, &'a str>, Given<'a, u64>), JobError> {
    let stride = r.nonzero_size("stride")?;
    let distribution = r.choice("distribution", DISTRIBUTION_VALUES)?;
    let center = match r.float("hot_spot")? {
        Some((c, s)) if !(0.0..=1.0).contains(&c) => {
            return Err(r.err(s, format!("hot_spot = {c} is not a fraction of the region (0 to 1)"), None))
        }
        found => found.map_or(0.5, |(c, _)| c),
    };
    let spread = match r.float("spread")? {
        Some((v, s)) if v <= 0.0 || v > MAX_SPREAD => {
            return Err(r.err(
                s,
                format!("{} = {v:?} is not a positive fraction of the region up to {MAX_SPREAD}", s.name()),
                Some("e.g. 0.1; a spread of 1 or more is already close to uniform".into()),
            ))
        }
        found => found.map_or(0.1, |(v, _)| v),
    };
    let theta = match r.float("zipf_theta")? {
        Some((t, s)) if t <= 0.0 || t > MAX_ZIPF_THETA => {
            return Err(r.err(
                s,
                format!("{} = {t:?} is not between 0 (exclusive) and {MAX_ZIPF_THETA}", s.name()),
                Some("typical values: 0.8 to 1.5".into()),
            ))
        }
        found => found.map_or(1.2, |(t, _)| t),
    };
    let pattern = match pattern {
        // A stride turns a sequential rw into a strided pattern (the only way to get one from flags).
        Some(("sequential", s)) if s.key() == "rw" && stride.is_some() => "strided",
        Some((p, _)) => p,
        None if stride.is_some() => "strided",
        None => "random",
    };
    let pattern = match pattern {
        "sequential" => Pattern::Sequential,
        "strided" => match stride {
            Some((stride, _)) => Pattern::Strided { stride },
            None => {
                let s = r.get("pattern").expect("only an explicit pattern is strided without a stride");
                return Err(r.err(
                    s,
                    "a strided pattern needs a stride",
                    Some(format!("add {}", s.spell("stride", "64k"))),
                ));
            }
        },
        "noncontig" => Pattern::Noncontiguous(noncontiguous(r)?),
        _ => Pattern::Random(match distribution.map_or("uniform", |(v, _)| v) {
            "normal" => Distribution::Normal { center, spread },
            "zipf" => Distribution::Zipf { theta },
            _ => Distribution::Uniform,
        }),
    };
    Ok((pattern, distribution, stride))
}

/// `pattern = "noncontig"`: regions per access, their size and spacing, data sieving; one
/// access must fit the region (`size`) and the largest file offset.
fn noncontiguous(r: &Reader) -> Result<Noncontiguous, JobError> {
    let s = r.get("pattern").expect("noncontig is only chosen explicitly");
    let regions = match r.uint("regions")? {
        Some((0, rs)) => return Err(r.err(rs, format!("{} must be at least 1", rs.name()), None)),
        Some((n, rs)) if n > MAX_REGIONS => {
            return Err(r.err(
                rs,
                format!("{} = {n}: at most {MAX_REGIONS} regions per access are supported", rs.name()),
                Some("fewer, larger regions make the same access pattern".into()),
            ))
        }
        Some((n, _)) => n,
        None => {
            return Err(r.err(
                s,
                "a noncontig pattern needs the number of regions per access",
                Some(format!("add {}", s.spell("regions", "64"))),
            ))
        }
    };
    let Some((region_size, _)) = r.nonzero_size("region_size")? else {
        return Err(r.err(
            s,
            "a noncontig pattern needs the size of each region",
            Some(format!("add {}", s.spell("region_size", "8"))),
        ));
    };
    let spacing = r.size("spacing")?.map_or(0, |(v, _)| v);
    let sieve = r.boolean("sieve")?.is_some_and(|(v, _)| v);
    let buffer = r.nonzero_size("sieve_buffer")?;
    // ROMIO's default ind_rd_buffer_size.
    let sieve_buffer = sieve.then(|| buffer.map_or(4 << 20, |(b, _)| b));
    let n = Noncontiguous { regions, region_size, spacing, sieve_buffer };
    // Offsets run to the access's end plus one spacing to the next access.
    let rs = r.get("regions").expect("regions was read above");
    let reach = n.checked_span().and_then(|v| v.checked_add(spacing)).filter(|v| *v <= MAX_OFFSET);
    let Some(reach) = reach else {
        return Err(r.err(
            rs,
            format!(
                "{regions} regions of {region_size} bytes, {spacing} apart, reach past the largest file offset"
            ),
            Some("lower regions, region_size or spacing".into()),
        ));
    };
    if let Some((region, size)) = r.nonzero_size("size")? {
        if reach - spacing > region {
            return Err(r.err(
                rs,
                format!(
                    "one access of {regions} regions spans {}, more than the region ({} = {})",
                    format_bytes(reach - spacing),
                    size.name(),
                    format_bytes(region)
                ),
                Some("lower regions, region_size or spacing, or raise size".into()),
            ));
        }
    }
    Ok(n)
}

/// Refuses the pattern settings the chosen operation and pattern do not use, and the
/// noncontig pattern with anything but reads or with calls of 4GiB or more.
pub(super) fn check_pattern_keys(r: &Reader, op: OpMix, pattern: &Pattern) -> Result<(), JobError> {
    r.unused(
        "read_pct",
        matches!(op, OpMix::Mixed { .. }),
        "the agent does not mix reads and writes",
        |s| format!("for a mix, use {}", s.spell("rw", "randrw")),
    )?;
    r.unused("stride", matches!(pattern, Pattern::Strided { .. }), "the pattern is not sequential", |s| {
        format!("a stride applies to sequential access, e.g. {}", s.spell("rw", "read"))
    })?;
    let random = matches!(pattern, Pattern::Random(_));
    r.unused("distribution", random, "offsets are not random", |s| {
        format!("distributions apply to random access, e.g. {}", s.spell("rw", "randread"))
    })?;
    let normal = matches!(pattern, Pattern::Random(Distribution::Normal { .. }));
    for key in ["hot_spot", "spread"] {
        r.unused(key, normal, "it shapes the normal distribution", |s| {
            format!("add {}", s.spell("distribution", "normal"))
        })?;
    }
    let noncontig = match *pattern {
        Pattern::Noncontiguous(n) => Some(n),
        _ => None,
    };
    for key in ["regions", "region_size", "spacing", "sieve"] {
        r.unused(key, noncontig.is_some(), "it shapes the noncontig pattern", |s| {
            format!("add {}", s.spell("pattern", "noncontig"))
        })?;
    }
    r.unused(
        "sieve_buffer",
        noncontig.is_some_and(|n| n.sieve_buffer.is_some()),
        "data sieving is off",
        |s| format!("add {}", s.spell("sieve", "true")),
    )?;
    if let Some(n) = noncontig {
        if op != OpMix::Read {
            let s = r.get("rw").or(r.get("op")).or(r.get("pattern")).expect("a pattern was given");
            return Err(r.err(
                s,
                "the noncontig pattern reads (sieving writes would need read-modify-write)",
                Some(format!("use {}", s.spell("rw", "read"))),
            ));
        }
        r.unused("bs", false, "request sizes of a noncontig pattern follow from its regions", |s| {
            format!("set {} instead", s.spell("region_size", "8"))
        })?;
        if n.max_call() > u32::MAX as u64 {
            let s = r.get("sieve_buffer").or(r.get("region_size")).expect("one of them is large");
            return Err(r.err(s, "calls of 4GiB or more are not supported", None));
        }
    }
    let zipf = matches!(pattern, Pattern::Random(Distribution::Zipf { .. }));
    r.unused("zipf_theta", zipf, "it shapes the zipf distribution", |s| {
        format!("add {}", s.spell("distribution", "zipf"))
    })?;
    Ok(())
}

/// `random_map`: random offsets without replacement, on by default for uniform random writes.
pub(super) fn random_map(
    r: &Reader,
    op: OpMix,
    pattern: &Pattern,
    distribution: Option<(&str, &Setting)>,
) -> Result<bool, JobError> {
    let random = matches!(pattern, Pattern::Random(_));
    let random_map = r.boolean("random_map")?;
    r.unused("random_map", random, "offsets are not random", |s| {
        format!("a random map applies to random access, e.g. {}", s.spell("rw", "randwrite"))
    })?;
    let uniform = *pattern == Pattern::Random(Distribution::Uniform);
    let random_map = match random_map {
        // A permutation visits every block once per pass: a skewed distribution would be flat.
        Some((true, s)) if random && !uniform && !s.inherited() => {
            return Err(r.err(
                s,
                format!(
                    "{} = true needs uniform offsets: without replacement every block is visited once \
                     per pass, which would flatten the {} distribution",
                    s.name(),
                    distribution.map_or("uniform", |(v, _)| v)
                ),
                Some(format!(
                    "drop {} (skewed offsets are drawn with replacement), or use {}",
                    s.name(),
                    s.spell("distribution", "uniform")
                )),
            ))
        }
        Some((v, _)) => v && uniform,
        // As fio keeps a random map for writes: each block written once before any is rewritten.
        None => uniform && op == OpMix::Write,
    };
    Ok(random_map)
}

/// The request sizes (`bs`, or what a noncontig access calls), and `bs` as given.
pub(super) fn request_sizes<'a>(
    r: &Reader<'a>,
    pattern: &Pattern,
) -> Result<(SizeSpec, Given<'a, SizeSpec>), JobError> {
    let bs = r.sizes()?;
    let sizes = match (pattern, &bs) {
        // The engine sizes its buffers by the largest call.
        (Pattern::Noncontiguous(n), _) => SizeSpec::Fixed(n.max_call()),
        (_, Some((v, _))) => v.clone(),
        (_, None) => SizeSpec::Fixed(4096),
    };
    if let Some((_, s)) = &bs {
        if sizes.min() == 0 {
            return Err(r.err(s, "request sizes must be positive", None));
        }
        if sizes.max() > u32::MAX as u64 {
            return Err(r.err(s, "request sizes of 4GiB or more are not supported", None));
        }
    }
    Ok((sizes, bs))
}
