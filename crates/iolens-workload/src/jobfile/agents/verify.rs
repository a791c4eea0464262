//! The verification settings of an agent (`verify`, `verify_after_write`,
//! `verify_generation`).

use super::super::settings::*;
use super::Reader;
use crate::model::limits::*;
use crate::model::*;

/// The `verify`, `verify_after_write` and `verify_generation` keys: blocks of one size that
/// start at multiples of it, written or read (not mixed), by an engine that moves data.
pub(crate) fn build_verify(
    r: &Reader,
    op: OpMix,
    pattern: &Pattern,
    sizes: &SizeSpec,
    engine: EngineKind,
) -> Result<Option<Verify>, JobError> {
    let kind = r.choice("verify", VERIFY_VALUES)?;
    r.unused(
        "verify_after_write",
        kind.is_some() && op == OpMix::Write,
        "it needs a verifying write agent",
        |s| format!("add {} to an agent with {}", s.spell("verify", "crc32c"), s.spell("rw", "write")),
    )?;
    r.unused("verify_generation", kind.is_some(), "the agent does not verify", |s| {
        format!("add {}", s.spell("verify", "crc32c"))
    })?;
    let Some((kind, s)) = kind else { return Ok(None) };
    let refuse = |message: String, hint: String| Err(r.err(s, message, Some(hint)));
    if let OpMix::Mixed { .. } = op {
        return refuse(
            "verification checks blocks a write agent wrote or a read agent reads, not a mix".into(),
            format!(
                "verify with a write agent ({}, {}), then a read agent on the same file",
                s.spell("rw", "write"),
                s.spell("verify_after_write", "true")
            ),
        );
    }
    if engine == EngineKind::Null {
        return refuse(
            "the null engine moves no data to verify".into(),
            format!("use {}", s.spell("engine", "sync")),
        );
    }
    let bs = match (pattern, sizes) {
        (Pattern::Noncontiguous(_), _) => {
            return refuse(
                "the noncontig pattern reads pieces of blocks, which cannot be verified".into(),
                format!("verify with {} or {}", s.spell("rw", "read"), s.spell("rw", "randread")),
            )
        }
        (_, SizeSpec::Weighted(_)) => {
            return refuse(
                "verification needs one request size (each block is one request)".into(),
                format!("give a single size, e.g. {}", s.spell("bs", "4k")),
            )
        }
        (_, SizeSpec::Fixed(bs)) => *bs,
    };
    if bs < MIN_VERIFY_BLOCK {
        return refuse(
            format!(
                "requests of {bs} bytes cannot hold a block header and trailer ({MIN_VERIFY_BLOCK} bytes)"
            ),
            format!("use {} or larger", s.spell("bs", "4k")),
        );
    }
    if let Pattern::Strided { stride } = pattern {
        if stride % bs != 0 {
            return refuse(
                format!("a stride of {stride} bytes is not a multiple of the {bs}-byte blocks"),
                "with verification, blocks start at multiples of the request size; use a stride that is one"
                    .into(),
            );
        }
    }
    let kind = match kind {
        "xxh3" => VerifyKind::Xxh3,
        "pattern" => VerifyKind::Pattern,
        _ => VerifyKind::Crc32c,
    };
    let after_write = r.boolean("verify_after_write")?.is_some_and(|(v, _)| v);
    let generation = match r.uint("verify_generation")? {
        Some((0, gs)) => {
            return Err(r.err(
                gs,
                format!("{} must be at least 1", gs.name()),
                Some("generations start at 1".into()),
            ))
        }
        found => found.map(|(g, _)| g),
    };
    Ok(Some(Verify { kind, after_write, generation }))
}
