//! What a program file is, as far as tracing it goes: the loader applies `LD_PRELOAD` only to
//! dynamically linked programs, so the tracer judges each program it sees started, both when
//! `iolens trace` starts it and when a traced process execs it.

/// Bytes at the start of a program that are read to judge it: the ELF header and the program
/// headers, which linkers place right after it.
pub const ELF_PROBE_BYTES: usize = 4096;

/// Whether a 64-bit little-endian ELF image has no `PT_INTERP` program header (is statically
/// linked). `None`, i.e. not judged, for anything else: scripts, 32-bit binaries, program
/// headers outside `bytes` or offsets that overflow.
pub fn elf_is_static(bytes: &[u8]) -> Option<bool> {
    if bytes.len() < 64 || &bytes[..4] != b"\x7fELF" || bytes[4] != 2 {
        return None;
    }
    let u16_at = |i: usize| u16::from_le_bytes([bytes[i], bytes[i + 1]]) as usize;
    let phoff = usize::try_from(u64::from_le_bytes(bytes[32..40].try_into().ok()?)).ok()?;
    let (phentsize, phnum) = (u16_at(54), u16_at(56));
    if phentsize < 4 {
        return None;
    }
    let mut has_interp = false;
    for i in 0..phnum {
        let at = i.checked_mul(phentsize)?.checked_add(phoff)?;
        let p_type = bytes.get(at..at.checked_add(4)?)?;
        has_interp |= u32::from_le_bytes(p_type.try_into().ok()?) == 3; // PT_INTERP
    }
    Some(!has_interp)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 64-bit little-endian ELF header with the given program-header table fields.
    fn elf(phoff: u64, phentsize: u16, phnum: u16) -> Vec<u8> {
        let mut b = vec![0u8; 64];
        b[..4].copy_from_slice(b"\x7fELF");
        b[4] = 2;
        b[32..40].copy_from_slice(&phoff.to_le_bytes());
        b[54..56].copy_from_slice(&phentsize.to_le_bytes());
        b[56..58].copy_from_slice(&phnum.to_le_bytes());
        b
    }

    #[test]
    fn static_elf_is_judged_by_its_program_headers() {
        let mut dynamic = elf(64, 56, 2);
        dynamic.extend_from_slice(&[1u8; 56]); // PT_LOAD
        dynamic.extend_from_slice(&3u32.to_le_bytes()); // PT_INTERP
        dynamic.extend_from_slice(&[0u8; 52]);
        assert_eq!(elf_is_static(&dynamic), Some(false));
        let mut fixed = elf(64, 56, 1);
        fixed.extend_from_slice(&[1u8; 56]);
        assert_eq!(elf_is_static(&fixed), Some(true));
        assert_eq!(elf_is_static(b"#!/bin/sh\n"), None, "not an ELF: not judged");
        assert_eq!(elf_is_static(&fixed[..66]), None, "program headers cut off: not judged");
    }

    #[test]
    fn hostile_program_headers_do_not_overflow() {
        for (phoff, phentsize, phnum) in [
            (u64::MAX, 56, 10),
            (u64::MAX - 3, u16::MAX, u16::MAX),
            (1 << 62, u16::MAX, u16::MAX),
            (64, 0, 3),
        ] {
            assert_eq!(elf_is_static(&elf(phoff, phentsize, phnum)), None, "{phoff} {phentsize} {phnum}");
        }
    }
}
