//! Round trips through the writer and the reader, and the stream errors the reader reports.

use super::*;

fn ev(i: u64) -> IoEvent {
    IoEvent {
        pid: 100,
        tid: 101 + (i % 2) as u32,
        file: (i % 3) as u32,
        op: if i % 2 == 0 { IoOp::Read } else { IoOp::Write },
        layer: Layer::Posix,
        flags: 0,
        offset: i * 512,
        requested: 512,
        result: if i == 5 { -28 } else { 512 },
        start_ns: i * 1000,
        end_ns: i * 1000 + 300,
    }
}

#[test]
fn round_trip_with_paths_and_drops() {
    let mut w = EventWriter::new(Vec::new()).unwrap();
    w.path(0, "/a").unwrap();
    w.path(1, "/b/ü").unwrap();
    w.path(2, "").unwrap();
    for i in 0..10 {
        w.event(&ev(i)).unwrap();
    }
    w.dropped(3).unwrap();
    let bytes = w.into_inner();
    let mut r = EventReader::new(&bytes[..]).unwrap();
    let events: Vec<IoEvent> = r.by_ref().map(|e| e.unwrap()).collect();
    assert_eq!(events, (0..10).map(ev).collect::<Vec<_>>());
    assert_eq!(r.paths.get(1), Some("/b/ü"));
    assert_eq!(r.dropped, 3);
    assert!(events[5].failed());
}

#[test]
fn lost_frames_add_to_the_drops_and_keep_the_reason() {
    let mut w = EventWriter::new(Vec::new()).unwrap();
    w.lost(0, 0).unwrap();
    w.event(&ev(1)).unwrap();
    w.lost(40, 28).unwrap();
    w.dropped(2).unwrap();
    let bytes = w.into_inner();
    let mut r = EventReader::new(&bytes[..]).unwrap();
    assert_eq!(r.by_ref().count(), 1);
    assert_eq!(r.dropped, 42);
    assert_eq!(r.lost_errno, Some(28));
    let cut = &bytes[..bytes.len() - 9 - 3];
    let err = EventReader::new(cut).unwrap().find_map(Result::err).unwrap();
    assert!(matches!(err, EventError::Truncated { .. }), "{err}");
}

#[test]
fn excluded_counts_add_up_per_reason() {
    let mut w = EventWriter::new(Vec::new()).unwrap();
    w.excluded(Excluded::CharDevice, 3, 300).unwrap();
    w.event(&ev(1)).unwrap();
    w.excluded(Excluded::CharDevice, 1, 50).unwrap();
    w.excluded(Excluded::PipeOrSocket, 2, 7).unwrap();
    let mut bytes = w.into_inner();
    let mut r = EventReader::new(&bytes[..]).unwrap();
    assert_eq!(r.by_ref().count(), 1);
    assert_eq!(r.excluded, [(2, 7), (4, 350), (0, 0), (0, 0), (0, 0), (0, 0), (0, 0)]);
    let last = bytes.len() - EXCLUDED_FRAME_LEN;
    bytes[last + 1] = Excluded::ALL.len() as u8;
    let err = EventReader::new(&bytes[..]).unwrap().find_map(Result::err);
    assert_eq!(
        err.unwrap().to_string(),
        format!("corrupt event stream at offset {last}: invalid exclusion reason {}", Excluded::ALL.len())
    );
}

#[test]
fn truncation_and_garbage_are_errors() {
    let mut w = EventWriter::new(Vec::new()).unwrap();
    w.event(&ev(1)).unwrap();
    let bytes = w.into_inner();
    let mut r = EventReader::new(&bytes[..bytes.len() - 3]).unwrap();
    let err = r.next_event().unwrap_err();
    assert!(matches!(err, EventError::Truncated { offset: 8 }), "{err}");
    assert_eq!(err.to_string(), "event stream ends inside the frame at offset 8: the writer was cut off");
    assert!(matches!(EventReader::new(&b"IOLTRACE"[..]), Err(EventError::BadMagic)));
    let mut bad = EVENT_MAGIC.to_vec();
    bad.push(9);
    let err = EventReader::new(&bad[..]).unwrap().next_event().unwrap_err();
    assert_eq!(err.to_string(), "corrupt event stream at offset 8: invalid frame tag 9");
    let mut w = EventWriter::new(Vec::new()).unwrap();
    w.path(0, "/a").unwrap();
    w.event(&ev(1)).unwrap();
    let mut bytes = w.into_inner();
    bytes[8 + 9 + 13] = 77;
    let mut r = EventReader::new(&bytes[..]).unwrap();
    let err = r.next_event().unwrap_err();
    assert_eq!(err.to_string(), "corrupt event stream at offset 17: invalid operation 77");
    assert!(r.next_event().unwrap().is_none(), "no resynchronization after corruption");
}

#[test]
fn huge_path_ids_cost_no_memory() {
    let mut w = EventWriter::new(Vec::new()).unwrap();
    w.path(u32::MAX - 1, "/far").unwrap();
    w.event(&IoEvent { file: u32::MAX - 1, ..ev(1) }).unwrap();
    let bytes = w.into_inner();
    let mut r = EventReader::new(&bytes[..]).unwrap();
    let e = r.next_event().unwrap().unwrap();
    assert_eq!(r.paths.get(e.file), Some("/far"));
}

/// Events of every shape the preload writes: unknown offsets, failures, short reads, flags,
/// the two halves of a copy (the second starting before the first ended), huge values.
fn varied_events() -> Vec<IoEvent> {
    let base = IoEvent { pid: 7, tid: 8, start_ns: 1_000_000, end_ns: 1_000_500, ..ev(0) };
    vec![
        base,
        IoEvent { offset: 512, start_ns: 1_000_600, end_ns: 1_001_000, ..base },
        IoEvent { offset: 1024, result: 100, start_ns: 1_001_100, end_ns: 1_001_200, ..base },
        IoEvent { op: IoOp::Open, offset: UNKNOWN_OFFSET, requested: 0, result: 3, file: 9, ..base },
        IoEvent {
            layer: Layer::Stdio,
            offset: UNKNOWN_OFFSET,
            result: -28,
            start_ns: 1_002_000,
            end_ns: 1_002_001,
            ..base
        },
        IoEvent {
            flags: FLAG_COPY_SOURCE,
            offset: u64::MAX - 1,
            requested: u64::MAX,
            result: i64::MIN,
            start_ns: 1_003_000,
            end_ns: 1_009_000,
            ..base
        },
        IoEvent { op: IoOp::Write, start_ns: 1_003_000, end_ns: 1_009_000, file: NO_FILE, ..base },
        IoEvent {
            op: IoOp::Other,
            layer: Layer::MpiIo,
            flags: FLAG_PROCESS_END,
            start_ns: 900_000,
            end_ns: 899_000,
            ..base
        },
    ]
}

#[test]
fn compact_events_round_trip_with_their_blocks_thread() {
    let events = varied_events();
    let mut w = EventWriter::new(Vec::new()).unwrap();
    w.path(0, "/a").unwrap();
    // Ticks are nanoseconds here (equal distances): the mapping is exact.
    let mut p = w.block(7, 8, (500_000, 500_000), (2_000_000, 2_000_000)).unwrap();
    for e in &events[..4] {
        w.compact_event(e, &mut p).unwrap();
    }
    w.event(&ev(3)).unwrap();
    let mut p = w.block(7, 8, (2_000_000, 2_000_000), (3_000_000, 3_000_000)).unwrap();
    for e in &events[4..] {
        w.compact_event(e, &mut p).unwrap();
    }
    let bytes = w.into_inner();
    let read: Vec<IoEvent> = EventReader::new(&bytes[..]).unwrap().map(|e| e.unwrap()).collect();
    let mut expected = events[..4].to_vec();
    expected.push(ev(3));
    expected.extend_from_slice(&events[4..]);
    assert_eq!(read, expected);
    // Read through buffers of every size: frames decoded in the buffer and frames read
    // piece by piece (those the buffer does not hold whole) give the same events.
    for capacity in 1..=bytes.len() {
        let input = std::io::BufReader::with_capacity(capacity, &bytes[..]);
        let read: Vec<IoEvent> = EventReader::new(input).unwrap().map(|e| e.unwrap()).collect();
        assert_eq!(read, expected, "buffer of {capacity} bytes");
    }
}

#[test]
fn a_sequential_call_takes_few_bytes() {
    let mut p = Predictor::new(0);
    let mut out = [0u8; COMPACT_EVENT_MAX_LEN];
    let call = |i: u64| IoEvent {
        offset: i * 512,
        requested: 512,
        result: 512,
        start_ns: i * 900 + 100,
        end_ns: i * 900 + 700,
        ..ev(0)
    };
    encode_compact(&call(0), &mut p, &mut out);
    let len = encode_compact(&call(1), &mut p, &mut out);
    // The tag, then the start and duration in two bytes each.
    assert_eq!(len, SHORT_EVENT_LEN);
}

#[test]
fn ticks_map_to_nanoseconds_along_the_blocks_segment() {
    let line = TickLine::between((1_000, 5_000), (3_001_000, 1_005_000));
    assert_eq!(line.ns(1_000), 5_000);
    assert_eq!(line.ns(1_501_000), 505_000);
    assert_eq!(line.ns(3_001_000), 1_005_000);
    let mut w = EventWriter::new(Vec::new()).unwrap();
    let mut p = w.block(1, 2, (1_000, 5_000), (3_001_000, 1_005_000)).unwrap();
    w.compact_event(&IoEvent { start_ns: 301_000, end_ns: 331_000, ..ev(0) }, &mut p).unwrap();
    let e = EventReader::new(&w.into_inner()[..]).unwrap().next_event().unwrap().unwrap();
    assert_eq!((e.pid, e.tid, e.start_ns, e.end_ns), (1, 2, 105_000, 115_000));
}

#[test]
fn consecutive_segments_keep_a_thread_in_order() {
    // Calibration points with the noise of a VM's clock: the second reads 300 ns late.
    let points = [(0u64, 0u64), (3_000_000, 1_000_300), (6_000_000, 2_000_000)];
    let first = TickLine::between(points[0], points[1]);
    let second = TickLine::between(points[1], points[2]);
    // A call ending just before the flush point, in one block, and one starting just after
    // it, in the next.
    let (end, next_start) = (points[1].0 - 30, points[1].0 + 30);
    assert!(first.ns(end) <= second.ns(next_start), "{} > {}", first.ns(end), second.ns(next_start));
    assert_eq!(first.ns(points[1].0), second.ns(points[1].0), "the segments meet");
}

#[test]
fn version_1_streams_are_read_and_unknown_versions_refused() {
    let mut v1 = EVENT_MAGIC_V1.to_vec();
    let mut frame = [0u8; EVENT_FRAME_LEN];
    encode_event(&ev(2), &mut frame);
    v1.extend_from_slice(&frame);
    let read: Vec<IoEvent> = EventReader::new(&v1[..]).unwrap().map(|e| e.unwrap()).collect();
    assert_eq!(read, vec![ev(2)]);
    // Version 1 has no blocks.
    v1.extend_from_slice(&encode_block_header(1, 2, (0, 0), (1, 1)));
    let err = EventReader::new(&v1[..]).unwrap().find_map(Result::err).unwrap();
    assert_eq!(
        err.to_string(),
        format!("corrupt event stream at offset {}: invalid frame tag 6", 8 + EVENT_FRAME_LEN)
    );
    let err = EventReader::new(&b"IOLEVT09"[..]).err().unwrap();
    assert!(matches!(err, EventError::UnsupportedVersion(ref v) if v == "09"), "{err}");
    assert!(err.to_string().contains("version 09"), "{err}");
}

#[test]
fn bad_compact_frames_are_errors() {
    let mut p = Predictor::new(0);
    let mut out = [0u8; COMPACT_EVENT_MAX_LEN];
    let len = encode_compact(&ev(1), &mut p, &mut out);
    let mut orphan = EVENT_MAGIC.to_vec();
    orphan.extend_from_slice(&out[..len]);
    let err = EventReader::new(&orphan[..]).unwrap().next_event().unwrap_err();
    assert_eq!(err.to_string(), "corrupt event stream at offset 8: compact event before any block header");
    let mut w = EventWriter::new(Vec::new()).unwrap();
    w.block(1, 2, (0, 0), (1, 1)).unwrap();
    let mut bytes = w.into_inner();
    let at = bytes.len();
    bytes.extend_from_slice(&out[..len]);
    let mut cut = bytes.clone();
    cut.truncate(bytes.len() - 1);
    let err = EventReader::new(&cut[..]).unwrap().next_event().unwrap_err();
    assert!(matches!(err, EventError::Truncated { offset } if offset == at as u64), "{err}");
    bytes[at] = TAG_COMPACT | 13;
    let err = EventReader::new(&bytes[..]).unwrap().next_event().unwrap_err();
    assert_eq!(err.to_string(), format!("corrupt event stream at offset {at}: invalid operation 13"));
    bytes[at] = TAG_COMPACT;
    bytes[at + 3] = 0x90;
    let err = EventReader::new(&bytes[..]).unwrap().next_event().unwrap_err();
    assert_eq!(err.to_string(), format!("corrupt event stream at offset {at}: invalid field length 9"));
}

proptest::proptest! {
    #[test]
    fn compact_events_round_trip(
        fields in proptest::collection::vec(
            (proptest::num::u32::ANY, proptest::num::u64::ANY, proptest::num::u64::ANY, proptest::num::i64::ANY,
             proptest::num::u64::ANY, proptest::num::u64::ANY, proptest::num::u16::ANY, 0u8..13, 0u8..4),
            1..20,
        )
    ) {
        let events: Vec<IoEvent> = fields
            .iter()
            .map(|&(file, offset, requested, result, start, end, flags, op, layer)| IoEvent {
                pid: 3,
                tid: 4,
                file,
                op: IoOp::from_u8(op).unwrap(),
                layer: Layer::from_u8(layer).unwrap(),
                flags,
                offset,
                requested,
                result,
                start_ns: start,
                end_ns: end,
            })
            .collect();
        let mut w = EventWriter::new(Vec::new()).unwrap();
        let mut p = w.block(3, 4, (10, 10), (20, 20)).unwrap();
        for e in &events {
            w.compact_event(e, &mut p).unwrap();
        }
        let bytes = w.into_inner();
        let read: Vec<IoEvent> = EventReader::new(&bytes[..]).unwrap().map(|e| e.unwrap()).collect();
        proptest::prop_assert_eq!(read, events);
    }
    #[test]
    fn calls_continuing_their_predecessor_round_trip(
        steps in proptest::collection::vec(
            (0u64..70_000, 0u64..70_000, proptest::bool::ANY, proptest::bool::ANY, proptest::bool::ANY, 0u8..3),
            1..40,
        )
    ) {
        // Mostly short events, with now and then a change that needs the general form.
        let mut events = Vec::new();
        let (mut at, mut end, mut requested) = (0u64, 1_000u64, 512u64);
        for (gap, duration, seek, resize, short_read, op) in steps {
            if seek { at = at.wrapping_mul(3).wrapping_add(4096); }
            if resize { requested += 512; }
            let result = if short_read { requested as i64 - 1 } else { requested as i64 };
            let start = end + gap;
            end = start + duration;
            let op = [IoOp::Read, IoOp::Write, IoOp::Other][op as usize];
            events.push(IoEvent { pid: 3, tid: 4, file: 1, op, layer: Layer::Posix, flags: 0, offset: at, requested, result, start_ns: start, end_ns: end });
            at += result.max(0) as u64;
        }
        let mut w = EventWriter::new(Vec::new()).unwrap();
        let mut p = w.block(3, 4, (10, 10), (20, 20)).unwrap();
        for e in &events {
            w.compact_event(e, &mut p).unwrap();
        }
        let bytes = w.into_inner();
        let read: Vec<IoEvent> = EventReader::new(&bytes[..]).unwrap().map(|e| e.unwrap()).collect();
        proptest::prop_assert_eq!(read, events);
    }

    #[test]
    fn arbitrary_frames_never_panic(body in proptest::collection::vec(proptest::num::u8::ANY, 0..400)) {
        let mut bytes = EVENT_MAGIC.to_vec();
        bytes.extend_from_slice(&body);
        let mut r = EventReader::new(&bytes[..]).unwrap();
        while let Ok(Some(_)) = r.next_event() {}
        proptest::prop_assert!(r.offset() <= bytes.len() as u64);
    }
}
