//! iolens's own formats: run traces (`IOLTRACE`) and event streams (`IOLEVT01`).

use std::collections::HashMap;
use std::path::Path;

use iolens_record::event::{EventReader, IoEvent, IoOp, Layer, NO_FILE};
use iolens_record::trace::{OpKind, OpStatus, TraceReader};

use crate::{Ctx, ImportError};

pub(crate) fn import_run_trace(ctx: &mut Ctx) -> Result<(), ImportError> {
    let path = ctx.path.clone();
    let reader = TraceReader::open(&path)
        .map_err(|e| ImportError::Format { path: path.clone(), message: e.to_string() })?;
    let ids: Vec<u32> = reader.streams.clone().iter().map(|name| ctx.new_path(name)).collect();
    for rec in reader {
        let rec = rec.map_err(|e| ImportError::Format { path: path.clone(), message: e.to_string() })?;
        let op = match rec.kind {
            OpKind::Read => IoOp::Read,
            OpKind::Write => IoOp::Write,
            OpKind::Fsync => IoOp::Fsync,
            OpKind::Close => IoOp::Close,
        };
        let result = match rec.status {
            OpStatus::Error => -(libc::EIO as i64),
            _ => rec.bytes as i64,
        };
        ctx.event(&IoEvent {
            pid: 0,
            tid: rec.stream as u32,
            file: ids.get(rec.stream as usize).copied().unwrap_or(NO_FILE),
            op,
            layer: Layer::Posix,
            flags: 0,
            offset: rec.offset,
            requested: rec.bytes as u64,
            result,
            start_ns: rec.start_ns,
            end_ns: rec.end_ns,
        });
    }
    Ok(())
}

/// The stream files of an `iolens trace` directory, in name order.
fn stream_files(dir: &Path) -> std::io::Result<Vec<std::path::PathBuf>> {
    let mut files: Vec<_> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "evt"))
        .collect();
    files.sort();
    Ok(files)
}

pub(crate) fn import_events(ctx: &mut Ctx) -> Result<(), ImportError> {
    let root = ctx.path.clone();
    let files = if root.is_dir() { stream_files(&root).map_err(|e| ctx.io(e))? } else { vec![root.clone()] };
    let mut truncated = 0;
    for file in files {
        let f = std::fs::File::open(&file).map_err(|e| ctx.io(e))?;
        let mut reader = match EventReader::new(std::io::BufReader::with_capacity(1 << 20, f)) {
            Ok(r) => r,
            // A process that died before its first flush leaves an empty stream.
            Err(_) if std::fs::metadata(&file).map(|m| m.len() == 0).unwrap_or(false) => continue,
            Err(e) => return Err(ImportError::Format { path: file.clone(), message: e.to_string() }),
        };
        // Path ids are local to each stream: map them to global ones when first used. Threads
        // flush their buffers in any order, so ids need not be defined in increasing order.
        let mut global: HashMap<u32, u32> = HashMap::new();
        loop {
            match reader.next_event() {
                Ok(Some(mut e)) => {
                    if e.file != NO_FILE {
                        e.file = match global.get(&e.file) {
                            Some(&id) => id,
                            None => match reader.paths.get(e.file) {
                                Some(p) => {
                                    let id = ctx.new_path(p);
                                    global.insert(e.file, id);
                                    id
                                }
                                None => NO_FILE,
                            },
                        };
                    }
                    ctx.event(&e);
                }
                Ok(None) => break,
                Err(iolens_record::event::EventError::Truncated) => {
                    truncated += 1;
                    break;
                }
                Err(e) => return Err(ImportError::Format { path: file.clone(), message: e.to_string() }),
            }
        }
        ctx.report.dropped += reader.dropped;
    }
    if truncated > 0 {
        ctx.report
            .notes
            .push(format!("{truncated} event stream(s) end inside a frame: a process was killed mid-write"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use iolens_record::event::EventWriter;

    use super::*;
    use crate::testing::Collect;
    use crate::{import, Format};

    fn ev(file: u32, op: IoOp, start: u64) -> IoEvent {
        IoEvent {
            pid: 7,
            tid: 7,
            file,
            op,
            layer: Layer::Posix,
            flags: 0,
            offset: 0,
            requested: 10,
            result: 10,
            start_ns: start,
            end_ns: start + 5,
        }
    }

    #[test]
    fn stream_directories_get_global_path_ids() {
        let dir = tempfile::tempdir().unwrap();
        for (name, paths) in [("1.1.evt", ["/a", "/b"]), ("2.1.evt", ["/c", "/a"])] {
            let mut w = EventWriter::new(Vec::new()).unwrap();
            w.path(0, paths[0]).unwrap();
            w.event(&ev(0, IoOp::Read, 1)).unwrap();
            w.path(1, paths[1]).unwrap();
            w.event(&ev(1, IoOp::Write, 2)).unwrap();
            w.dropped(2).unwrap();
            std::fs::write(dir.path().join(name), w.into_inner()).unwrap();
        }
        std::fs::write(dir.path().join("ignored.txt"), "x").unwrap();
        let mut c = Collect::default();
        let r = import(dir.path(), Format::Events, false, &mut c).unwrap();
        assert_eq!(r.events, 4);
        assert_eq!(r.dropped, 4);
        let files: Vec<&str> = c.events.iter().map(|e| c.path_of(e.file)).collect();
        assert_eq!(files, ["/a", "/b", "/c", "/a"]);
        assert_eq!(c.paths.len(), 4, "ids are per definition, unique over the import");
    }

    #[test]
    fn path_ids_defined_out_of_order_resolve() {
        // Threads flush their buffers in the order they end, so a stream may define id 3
        // before ids 1 and 2.
        let dir = tempfile::tempdir().unwrap();
        let mut w = EventWriter::new(Vec::new()).unwrap();
        w.path(3, "/t3").unwrap();
        w.event(&ev(3, IoOp::Write, 1)).unwrap();
        w.path(1, "/t1").unwrap();
        w.event(&ev(1, IoOp::Write, 2)).unwrap();
        w.path(2, "/t2").unwrap();
        w.event(&ev(2, IoOp::Write, 3)).unwrap();
        w.event(&ev(1, IoOp::Write, 4)).unwrap();
        std::fs::write(dir.path().join("9.1.evt"), w.into_inner()).unwrap();
        let mut c = Collect::default();
        import(dir.path(), Format::Events, false, &mut c).unwrap();
        let files: Vec<&str> = c.events.iter().map(|e| c.path_of(e.file)).collect();
        assert_eq!(files, ["/t3", "/t1", "/t2", "/t1"]);
    }
}
