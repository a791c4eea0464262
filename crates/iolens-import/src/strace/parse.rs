//! Taking strace's lines apart: the pid and time prefix, strace's own messages, the argument
//! list, and the argument forms (C strings, descriptors with -y paths, numbers, structures).

use iolens_record::event::UNKNOWN_OFFSET;

use crate::seconds_to_ns;

/// Who made a call, as the line's prefix says.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Prefix {
    /// `N` (`strace -f -o FILE`): every line names its thread.
    Pid(u32),
    /// `[pid N]` (`strace -f` to the terminal): only while several processes are traced.
    Bracketed(u32),
    /// No pid: one process traced, or strace printing to the terminal with only one left.
    None,
}

/// Splits `[pid] seconds.micros rest` (the pid bare or as `[pid N]`); the time in nanoseconds.
pub(super) fn parse_prefix(line: &str) -> Option<(Prefix, u64, &str)> {
    let line = line.trim_start();
    if let Some(bracketed) = line.strip_prefix("[pid") {
        let (pid, rest) = bracketed.split_once(']')?;
        let (ts, rest) = rest.trim_start().split_once(' ')?;
        return Some((Prefix::Bracketed(pid.trim().parse().ok()?), seconds_to_ns(ts)?, rest.trim_start()));
    }
    let (first, rest) = line.split_once(' ')?;
    if first.contains('.') {
        return Some((Prefix::None, seconds_to_ns(first)?, rest.trim_start()));
    }
    let pid: u32 = first.parse().ok()?;
    let rest = rest.trim_start();
    let (ts, rest) = rest.split_once(' ')?;
    Some((Prefix::Pid(pid), seconds_to_ns(ts)?, rest.trim_start()))
}

/// strace's message that it attached to (or detached from) process N, which on the terminal
/// may cut into a call's line: the text before it, and N when it attached.
pub(super) fn strace_message(line: &str) -> Option<(&str, Option<u32>)> {
    const MESSAGE: &str = "strace: Process ";
    let at = line.find(MESSAGE)?;
    let (pid, what) = line[at + MESSAGE.len()..].split_once(' ')?;
    let pid: u32 = pid.parse().ok()?;
    match what.trim_end() {
        "attached" => Some((&line[..at], Some(pid))),
        "detached" => Some((&line[..at], None)),
        _ => None,
    }
}

/// Splits a call's arguments at top-level commas (quotes, brackets and braces respected).
pub(super) fn split_args(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut in_str, mut escaped, mut start) = (0i32, false, false, 0);
    for (i, c) in s.char_indices() {
        if in_str {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_str = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_str = true,
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(s[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    let last = s[start..].trim();
    if !last.is_empty() {
        out.push(last);
    }
    out
}

/// The position of the ')' closing the argument list that opens at `open`.
pub(super) fn closing_paren(s: &str, open: usize) -> Option<usize> {
    let (mut depth, mut in_str, mut escaped) = (0i32, false, false);
    for (i, c) in s[open..].char_indices() {
        if in_str {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_str = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_str = true,
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(open + i);
                }
            }
            _ => {}
        }
    }
    None
}

pub(super) fn errno_number(name: &str) -> i64 {
    let n = match name {
        "EPERM" => libc::EPERM,
        "ENOENT" => libc::ENOENT,
        "EINTR" => libc::EINTR,
        "EIO" => libc::EIO,
        "EBADF" => libc::EBADF,
        "EAGAIN" => libc::EAGAIN,
        "ENOMEM" => libc::ENOMEM,
        "EACCES" => libc::EACCES,
        "EEXIST" => libc::EEXIST,
        "ENOTDIR" => libc::ENOTDIR,
        "EISDIR" => libc::EISDIR,
        "EINVAL" => libc::EINVAL,
        "ENOSPC" => libc::ENOSPC,
        "ESPIPE" => libc::ESPIPE,
        "EROFS" => libc::EROFS,
        "EFBIG" => libc::EFBIG,
        "EXDEV" => libc::EXDEV,
        "EOPNOTSUPP" => libc::EOPNOTSUPP,
        "ENOSYS" => libc::ENOSYS,
        _ => 1,
    };
    n as i64
}

/// A decoded C string argument (`"abc"...` with escapes), for paths.
pub(super) fn c_string(arg: &str) -> Option<String> {
    let body = arg.strip_prefix('"')?;
    let end = body.rfind('"')?;
    let mut out = String::new();
    let mut chars = body[..end].chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some(other) => out.push(other),
            None => {}
        }
    }
    Some(out)
}

/// `3</tmp/x>` (with -y) → (3, Some("/tmp/x")); `3` → (3, None).
pub(super) fn fd_arg(arg: &str) -> Option<(i32, Option<&str>)> {
    match arg.split_once('<') {
        Some((fd, path)) => Some((fd.trim().parse().ok()?, Some(path.trim_end_matches('>')))),
        None => Some((arg.trim().parse().ok()?, None)),
    }
}

pub(super) fn number(arg: &str) -> Option<u64> {
    let a = arg.trim();
    let a = a.strip_prefix('[').and_then(|x| x.strip_suffix(']')).unwrap_or(a);
    match a.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => a.parse().ok(),
    }
}

/// A copy's offset argument: `NULL` (the descriptor's position: `None`), or the offset strace
/// shows in brackets, with what the call left there after `=>`.
pub(super) fn offset_arg(arg: &str) -> Option<u64> {
    (arg != "NULL").then(|| number(arg.split(" =>").next().unwrap_or(arg)).unwrap_or(UNKNOWN_OFFSET))
}

/// A field of a structure strace prints, `{src_fd=3, src_length=16384, …}`.
pub(super) fn field<'a>(arg: &'a str, name: &str) -> Option<&'a str> {
    let body = arg.strip_prefix('{')?.strip_suffix('}')?;
    body.split(", ").find_map(|f| f.strip_prefix(name)?.strip_prefix('='))
}
