//! The job record (job data, executable line and mount table) and the name records that map
//! record ids to file names.

use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, Read};

use super::header::{JOB_RECORD_LEN, MAX_NAME, MAX_NAME_BYTES};
use super::{read_record, DarshanLog, DarshanMount, Header};
use crate::{Ctx, ImportError};

pub(super) fn read_job(header: &Header, data: &mut dyn Read, log: &mut DarshanLog) -> io::Result<()> {
    let mut buf = Vec::new();
    data.take(JOB_RECORD_LEN).read_to_end(&mut buf)?;
    let o = header.order;
    // Since 3.41 the start and end times carry nanoseconds.
    let fixed = if header.minor >= 41 { 56 } else { 40 };
    let meta_len = 1024;
    if buf.len() < fixed + meta_len {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "the job record has {} bytes, fewer than the {} of its fixed part",
                buf.len(),
                fixed + meta_len
            ),
        ));
    }
    let j = &mut log.job;
    j.uid = o.i64(&buf, 0);
    j.start_time_s = o.i64(&buf, 8);
    if header.minor >= 41 {
        j.start_time_ns = o.i64(&buf, 16);
        j.end_time_s = o.i64(&buf, 24);
        j.end_time_ns = o.i64(&buf, 32);
        j.nprocs = o.i64(&buf, 40);
        j.jobid = o.i64(&buf, 48);
        j.runtime_s = (j.end_time_s as f64 + j.end_time_ns as f64 / 1e9)
            - (j.start_time_s as f64 + j.start_time_ns as f64 / 1e9);
    } else {
        j.end_time_s = o.i64(&buf, 16);
        j.nprocs = o.i64(&buf, 24);
        j.jobid = o.i64(&buf, 32);
        j.runtime_s = (j.end_time_s.saturating_sub(j.start_time_s)).saturating_add(1) as f64;
    }
    let text = |b: &[u8]| {
        String::from_utf8_lossy(&b[..b.iter().position(|&c| c == 0).unwrap_or(b.len())]).into_owned()
    };
    j.metadata =
        text(&buf[fixed..fixed + meta_len]).lines().filter(|l| !l.is_empty()).map(String::from).collect();
    let rest = text(&buf[fixed + meta_len..]);
    let mut lines = rest.split('\n');
    j.exe = lines.next().unwrap_or("").to_string();
    for line in lines.filter(|l| !l.is_empty()) {
        // Mount lines are "fs_type<TAB>mount point".
        let (fs_type, path) = line.split_once('\t').unwrap_or(("?", line));
        log.mounts.push(DarshanMount { path: path.to_string(), fs_type: fs_type.to_string() });
    }
    Ok(())
}

pub(super) fn read_names(
    ctx: &Ctx,
    header: &Header,
    data: &mut dyn Read,
    names: &mut HashMap<u64, String>,
) -> Result<(), ImportError> {
    let err = |m: String| ctx.format_err(&ctx.path, m);
    let decompress = |e: io::Error| err(format!("the name-record region cannot be decompressed: {e}"));
    let mut r = BufReader::new(data.take(MAX_NAME_BYTES + 1));
    let mut id_buf = [0u8; 8];
    let mut name = Vec::new();
    let mut count = 0u64;
    loop {
        match read_record(&mut r, &mut id_buf).map_err(decompress)? {
            Ok(true) => {}
            Ok(false) => break,
            Err(got) => {
                return Err(err(format!("name record {count} is cut short ({got} of its 8 id bytes)")))
            }
        }
        let id = header.order.u64(&id_buf, 0);
        name.clear();
        if header.minor == 0 {
            // 3.00: a u32 length, then the path without terminator.
            let mut len_buf = [0u8; 4];
            if read_record(&mut r, &mut len_buf).map_err(decompress)? != Ok(true) {
                return Err(err(format!("name record {count} (id {id:#x}) is cut short in its length")));
            }
            let len = header.order.u32(&len_buf, 0) as usize;
            if len > MAX_NAME {
                return Err(err(format!(
                    "name record {count} (id {id:#x}) claims a {len}-byte name (more than {MAX_NAME}): corrupt"
                )));
            }
            name.resize(len, 0);
            if read_record(&mut r, &mut name).map_err(decompress)? != Ok(true) {
                return Err(err(format!("name record {count} (id {id:#x}) is cut short in its name")));
            }
        } else {
            (&mut r).take(MAX_NAME as u64 + 1).read_until(0, &mut name).map_err(decompress)?;
            if name.last() != Some(&0) {
                return Err(err(format!(
                    "name record {count} (id {id:#x}) has no terminated name (cut short, or longer than {MAX_NAME} bytes)"
                )));
            }
            name.pop();
        }
        if r.get_ref().limit() == 0 {
            return Err(err(format!("the name records exceed {} MiB: corrupt", MAX_NAME_BYTES >> 20)));
        }
        // A later non-empty name replaces an empty one, as darshan-util does.
        let entry = names.entry(id).or_default();
        if entry.is_empty() {
            *entry = String::from_utf8_lossy(&name).into_owned();
        }
        count += 1;
    }
    Ok(())
}
