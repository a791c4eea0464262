//! What a program file is, as far as tracing it goes: the loader applies `LD_PRELOAD` only to
//! dynamically linked programs, so the tracer judges each program it sees started, both when
//! `iolens trace` starts it and when a traced process execs it.

/// Bytes at the start of a program that are read to judge it: the ELF header and the program
/// headers, which linkers place right after it.
pub const ELF_PROBE_BYTES: usize = 4096;

/// Calls `each` with the type, file offset and file size of every program header of a 64-bit
/// little-endian ELF image; `None` (and no judgement) for anything else: scripts, 32-bit
/// binaries, program headers outside `bytes` or offsets that overflow.
fn program_headers(bytes: &[u8], mut each: impl FnMut(u32, u64, u64)) -> Option<()> {
    if bytes.len() < 64 || &bytes[..4] != b"\x7fELF" || bytes[4] != 2 {
        return None;
    }
    let u16_at = |i: usize| u16::from_le_bytes([bytes[i], bytes[i + 1]]) as usize;
    let phoff = usize::try_from(u64::from_le_bytes(bytes[32..40].try_into().ok()?)).ok()?;
    let (phentsize, phnum) = (u16_at(54), u16_at(56));
    if phentsize < 4 {
        return None;
    }
    for i in 0..phnum {
        let at = i.checked_mul(phentsize)?.checked_add(phoff)?;
        let p_type = u32::from_le_bytes(bytes.get(at..at.checked_add(4)?)?.try_into().ok()?);
        // p_offset and p_filesz, when the entry is as long as ELF64's (56 bytes).
        let word = |field: usize| {
            let from = at.checked_add(field)?;
            Some(u64::from_le_bytes(bytes.get(from..from.checked_add(8)?)?.try_into().ok()?))
        };
        let (offset, size) = if phentsize >= 56 { (word(8)?, word(32)?) } else { (0, 0) };
        each(p_type, offset, size);
    }
    Some(())
}

/// Whether a 64-bit little-endian ELF image has no `PT_INTERP` program header (is statically
/// linked). `None`, i.e. not judged, for anything else: scripts, 32-bit binaries, program
/// headers outside `bytes` or offsets that overflow.
pub fn elf_is_static(bytes: &[u8]) -> Option<bool> {
    let mut has_interp = false;
    program_headers(bytes, |p_type, _, _| has_interp |= p_type == 3)?; // PT_INTERP
    Some(!has_interp)
}

/// Whether a 64-bit little-endian ELF image is a Go program: one of its `PT_NOTE` segments holds
/// the build-ID note the Go linker writes into every Go program, linked by Go or by the system
/// linker (a note named "Go" of type 4). Go makes its system calls itself, past libc, so
/// `LD_PRELOAD` hooks see none of its I/O even where the loader applies them. `None` when not
/// judged (as [`elf_is_static`]); notes beyond `bytes` are not looked for.
pub fn elf_is_go(bytes: &[u8]) -> Option<bool> {
    let mut go = false;
    program_headers(bytes, |p_type, offset, size| {
        if p_type != 4 {
            return; // PT_NOTE
        }
        let notes = usize::try_from(offset)
            .ok()
            .zip(usize::try_from(size).ok())
            .and_then(|(from, len)| bytes.get(from..from.checked_add(len)?));
        go |= notes.is_some_and(has_go_build_id);
    })?;
    Some(go)
}

/// Whether a run of ELF notes holds Go's build ID.
fn has_go_build_id(mut notes: &[u8]) -> bool {
    let u32_at = |b: &[u8], i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]) as usize;
    while notes.len() >= 12 {
        let (name_len, desc_len, kind) = (u32_at(notes, 0), u32_at(notes, 4), u32_at(notes, 8));
        let padded = |n: usize| n.checked_add(3).map(|n| n & !3);
        let Some(end) = padded(name_len)
            .zip(padded(desc_len))
            .and_then(|(name, desc)| name.checked_add(desc)?.checked_add(12))
        else {
            return false;
        };
        // The Go linker names it "Go\0\0" (4 bytes); "Go\0" is the same name.
        if (name_len == 3 || name_len == 4) && kind == 4 && notes.get(12..15) == Some(b"Go\0") {
            return true;
        }
        notes = notes.get(end..).unwrap_or_default();
    }
    false
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

    /// A 64-bit ELF with one `PT_NOTE` program header whose notes are `notes`.
    fn with_notes(notes: &[u8]) -> Vec<u8> {
        let mut b = elf(64, 56, 1);
        let mut note_header = [0u8; 56];
        note_header[..4].copy_from_slice(&4u32.to_le_bytes());
        note_header[8..16].copy_from_slice(&120u64.to_le_bytes());
        note_header[32..40].copy_from_slice(&(notes.len() as u64).to_le_bytes());
        b.extend_from_slice(&note_header);
        b.extend_from_slice(notes);
        b
    }

    fn note(name: &[u8], kind: u32, desc: &[u8]) -> Vec<u8> {
        let mut n = Vec::new();
        n.extend_from_slice(&(name.len() as u32).to_le_bytes());
        n.extend_from_slice(&(desc.len() as u32).to_le_bytes());
        n.extend_from_slice(&kind.to_le_bytes());
        for part in [name, desc] {
            n.extend_from_slice(part);
            n.resize(n.len().div_ceil(4) * 4, 0);
        }
        n
    }

    #[test]
    fn a_go_program_is_known_by_its_build_id_note() {
        let gnu = note(b"GNU\0", 3, &[7; 20]);
        let go = note(b"Go\0\0", 4, b"abc/def"); // as the Go linker writes it
        assert_eq!(elf_is_go(&with_notes(&[gnu.clone(), go.clone()].concat())), Some(true));
        assert_eq!(elf_is_go(&with_notes(&gnu)), Some(false), "a C program's notes");
        assert_eq!(elf_is_go(&with_notes(&note(b"Go\0", 4, b"x"))), Some(true), "the name unpadded");
        assert_eq!(elf_is_go(&with_notes(&note(b"Go\0\0", 3, b"x"))), Some(false), "another type");
        assert_eq!(elf_is_go(&with_notes(&note(b"Gopher\0", 4, b"x"))), Some(false), "another name");
        let cut = with_notes(&[gnu, go].concat());
        assert_eq!(elf_is_go(&cut[..cut.len() - 8]), Some(false), "notes beyond the bytes are not read");
        assert_eq!(elf_is_go(b"#!/bin/sh\n"), None);
    }

    #[test]
    fn hostile_notes_end_the_search() {
        let mut huge = note(b"Go\0", 4, b"");
        huge[..4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(elf_is_go(&with_notes(&huge)), Some(false));
        let mut b = with_notes(&note(b"Go\0", 4, b""));
        b[64 + 8..64 + 16].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(elf_is_go(&b), Some(false), "a note segment at an offset that overflows");
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
