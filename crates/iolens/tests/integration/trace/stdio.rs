//! The stdio hooks (fprintf, fread, getline, freopen, scanf, wide characters): the calls and
//! the bytes they moved, against what the kernel saw (strace), and the macros no hook can see.

use super::*;

const STDIO_PROGRAM: &str = include_str!("../../programs/stdio.c");

#[test]
fn stdio_calls_count_what_they_moved() {
    let build = scratch();
    let Some(prog) = compile_c(build.path(), "stdio", STDIO_PROGRAM) else { return };
    if !require_tool("strace") {
        return;
    }
    let command = format!("{} > stdout.txt", prog.display());
    let cmd = ["sh", "-c", command.as_str()];
    let (strace_dir, iolens_dir) = (scratch(), scratch());
    let expected = strace_counts(&cmd, strace_dir.path(), strace_dir.path(), false);
    let (ops, _) = iolens_ops(&cmd, iolens_dir.path());
    let under = iolens_dir.path().to_str().unwrap();
    let stdio = |op: &str| -> Vec<Op> {
        ops.iter()
            .filter(|o| o.layer == "stdio" && o.op == op && o.path.starts_with(under))
            .cloned()
            .collect()
    };
    let (writes, reads) = (stdio("write"), stdio("read"));

    // fprintf, fputs, fputc, putc, fwrite 100 times each, then printf 50 times.
    assert_eq!(writes.len(), 550, "every stdio write call");
    let written: i64 = writes.iter().map(|o| o.result).sum();
    assert_eq!(written as u64, expected["write"].1, "stdio bytes written vs the kernel's (strace)");
    assert!(writes.iter().all(|o| o.requested == o.result as u64), "each asked for what it wrote");

    // The file read five times over: by lines (fgets, getline), by characters (fgetc, getc), in
    // blocks of 1000 (fread); each pass ends with a call that finds the end of the file.
    let size: u64 = (0..100).map(|i| format!("line {i}\n").len() as u64 + 6 + 2 + 10).sum();
    let lines = 301; // the last, "0123456789", without its newline
    let blocks = size.div_ceil(1000);
    assert_eq!(reads.len() as u64, 2 * (lines + 1) + 2 * (size + 1) + (blocks + 1), "every stdio read call");
    let read: i64 = reads.iter().map(|o| o.result).sum();
    assert_eq!(read as u64, 5 * size, "bytes read: five passes over the file");
    let requested: u64 = reads.iter().map(|o| o.requested).sum();
    assert_eq!(
        requested,
        2 * size + 2 * (size + 1) + (blocks + 1) * 1000,
        "a line read asks for the line, not the buffer's size"
    );
}

const REOPEN_SCAN_PROGRAM: &str = include_str!("../../programs/stdio_reopen_scan.c");

#[test]
fn freopen_scanf_getw_putw_and_dprintf_count_what_they_moved_under_their_file() {
    let Some((kernel, ops, _, under)) = under_strace_and_iolens("reopen", REOPEN_SCAN_PROGRAM, true, |_| {})
    else {
        return;
    };
    // Calls and bytes per (file, layer, op).
    let mut got: BTreeMap<(String, String, String), (u64, i64)> = BTreeMap::new();
    for o in ops.iter().filter(|o| o.path.starts_with(&under)) {
        let e = got.entry((o.path[under.len()..].to_string(), o.layer.clone(), o.op.clone())).or_default();
        e.0 += 1;
        e.1 += o.result.max(0);
    }
    let get = |file: &str, layer: &str, op: &str| {
        got.get(&(file.to_string(), layer.to_string(), op.to_string())).copied().unwrap_or_default()
    };
    let kernel_bytes = |key: &str| kernel.get(key).map_or(0, |c| c.1) as i64;

    // freopen: the writes after it are the second file's, though the descriptor number is the
    // same; each file's stdio bytes are what the kernel wrote to it.
    assert_eq!(get("first.txt", "stdio", "write"), (10, 1000), "{got:?}");
    assert_eq!(get("second.txt", "stdio", "write"), (50, 5000), "{got:?}");
    assert_eq!(kernel_bytes("first.txt write"), 1000);
    assert_eq!(kernel_bytes("second.txt write"), 5000);
    assert_eq!(get("second.txt", "stdio", "open").0, 1, "freopen opens the second file: {got:?}");

    // fscanf, then scanf on stdin reopened on the same file: every call, the whole file each
    // time (the last call of each pass consumes the final newline and finds the end).
    let size = kernel_bytes("numbers.txt write");
    assert_eq!(size, (0..1000).map(|i: i64| i.to_string().len() as i64 + 1).sum::<i64>());
    assert_eq!(get("numbers.txt", "stdio", "read"), (2 * 1001, 2 * size), "{got:?}");
    assert_eq!(kernel_bytes("numbers.txt read"), 2 * size, "the kernel read the file twice");

    // putw and getw move a word each; the last getw finds the end.
    assert_eq!(get("words.bin", "stdio", "write"), (100, 400), "{got:?}");
    assert_eq!(get("words.bin", "stdio", "read"), (101, 400), "{got:?}");

    // dprintf writes through its own stream on the descriptor: a POSIX write each, as strace
    // sees them.
    let kernel_lines = kernel["lines.txt write"];
    assert_eq!(kernel_lines.0, 200);
    assert_eq!(get("lines.txt", "posix", "write"), (200, kernel_lines.1 as i64), "{got:?}");
}

const INLINED_STDIO_PROGRAM: &str = include_str!("../../programs/stdio_inlined.c");

#[test]
fn stdio_macros_inlined_into_the_program_are_said_to_be_uncounted_with_their_buffers_bytes() {
    let Some((kernel, _, summary, _)) =
        under_strace_and_iolens("inlined", INLINED_STDIO_PROGRAM, true, |dir| {
            write_file(&dir.join("in.txt"), 20000)
        })
    else {
        return;
    };
    let notes = summary["notes"].to_string();
    let note = notes.split("\",\"").find(|n| n.contains("inlined")).unwrap_or_else(|| panic!("{notes}"));
    let numbers: Vec<u64> =
        note.split(|c: char| !c.is_ascii_digit()).filter_map(|w| w.parse().ok()).collect();
    let [refills, refilled, flushes, flushed] = numbers[..] else { panic!("{note}") };
    assert_eq!(refilled, kernel["in.txt read"].1, "the refills brought what the kernel read: {note}");
    assert!(refills >= 1 && refills <= kernel["in.txt read"].0, "{note}");
    assert!(flushes >= 1 && flushed > 0 && flushed <= 10000, "{note}");
    assert_eq!(summary["read_bytes"].as_u64(), Some(0), "the characters are not counted as calls: {summary}");
}

const WIDE_STDIO_PROGRAM: &str = include_str!("../../programs/stdio_wide.c");

#[test]
fn wide_character_stdio_counts_the_bytes_it_moved() {
    let Some((kernel, ops, _, under)) = under_strace_and_iolens("wide", WIDE_STDIO_PROGRAM, false, |_| {})
    else {
        return;
    };
    let stdio = |op: &str| -> (u64, i64) {
        let calls: Vec<&Op> =
            ops.iter().filter(|o| o.layer == "stdio" && o.op == op && o.path.starts_with(&under)).collect();
        (calls.len() as u64, calls.iter().map(|o| o.result).sum())
    };
    let size = kernel["write"].1 as i64;
    assert_eq!(stdio("write"), (300, size), "every wide write, with the bytes the kernel wrote");
    // 201 lines (the last, "x", without its newline) and the call that finds the end; then
    // every character and the call that finds the end.
    assert_eq!(stdio("read"), (202 + size as u64 + 1, 2 * size), "every wide read");
    assert_eq!(kernel["read"].1 as i64, 2 * size, "the kernel read the file twice");
}
