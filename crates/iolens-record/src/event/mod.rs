//! I/O events of traced programs, and their binary stream format.
//!
//! An [`IoEvent`] is one call an application made (POSIX, stdio, MPI-IO) or one request a
//! device served, whichever layer the trace comes from. Events name files through a path table
//! of the trace ([`PathTable`]), so a record stays fixed-size.
//!
//! # Stream layout (little-endian)
//!
//! A stream starts with an 8-byte magic, `IOLEVT02` (or `IOLEVT01`, the first version, which
//! has no block or compact frames and is still read), then frames, each starting with a tag byte:
//!
//! - `1` — an event, 64 bytes follow: pid u32, tid u32, file u32 (`NO_FILE` = none), op u8,
//!   layer u8, flags u16, offset u64 (`UNKNOWN_OFFSET` = unknown), requested u64, result i64
//!   (bytes, or −errno), start_ns u64, end_ns u64, 8 reserved bytes;
//! - `2` — a path: id u32, length u16, then that many UTF-8 bytes. A path frame precedes the
//!   first event that uses its id;
//! - `3` — a drop count: u64 events the writer could not record (reported, never silent);
//! - `4` — excluded calls: reason u8 ([`Excluded`]), calls u64, bytes u64: reads and writes on
//!   descriptors that are not files (pipes, terminals, `/dev/zero`), counted, not recorded;
//! - `5` — events lost: count u64, errno u32 of the last failed write (0 = none). The preload
//!   writes one right after the magic when it opens a stream and rewrites it in place when
//!   writes fail: on a full disk no frame can be appended, but the bytes of this one are
//!   already there;
//! - `6` — a block header (version 2): pid u32, tid u32, and the clock segment of the block,
//!   tick0 u64, ns0 u64, tick1 u64, ns1 u64. The compact events up to the next block header
//!   are calls of that thread, timed in ticks (the TSC, or nanoseconds when tick and ns
//!   distances are equal) that map to nanoseconds along the line through (tick0, ns0) and
//!   (tick1, ns1). A writer starts each block where its previous one ended, so one thread's
//!   blocks form one continuous increasing line and its calls stay in order;
//! - `0x80 | F << 6 | layer << 4 | op` — a compact event (version 2): 3 bytes of 4-bit lengths
//!   (bits 4k..4k+4 for field k, 0 to 8 bytes), then the six fields, little-endian, each in
//!   that many bytes: file XOR the block's previous file; zigzag(offset − the predicted offset:
//!   previous offset + bytes it moved, unknown stays unknown); requested XOR the previous
//!   requested; zigzag(result − requested); zigzag(start − previous end); zigzag(end − start);
//!   then, if bit F is set, flags u16. "Previous" values start as file 0, requested 0, offset
//!   unknown, end tick0 at each block header;
//! - `0x40 | layer << 4 | op` — a short compact event (version 2): the call that continues the
//!   previous one of the block (same file and request size, at the predicted offset, moved all
//!   it asked for, no flags), started less than 2^16 ticks after it ended and lasting less
//!   than 2^16 ticks: start − previous end u16, end − start u16. A sequential 512 B read takes
//!   5 bytes instead of 65: the bytes written per call are most of what tracing costs.
//!
//! Markers are event frames with op `Other`, no data, and a flag: [`FLAG_PROCESS_START`] (the
//! first event of each stream: file = the executable, offset = the parent's pid),
//! [`FLAG_PROCESS_END`], [`FLAG_SECURE_EXEC`], [`FLAG_MPI_RANK`], [`FLAG_AIO_UNCOLLECTED`],
//! [`FLAG_STATIC_EXEC`], [`FLAG_NATIVE_AIO`], [`FLAG_GO_PROGRAM`].
//!
//! An MPI process (one that called `MPI_Init`) also leaves `<pid>.<start ns>.mpi` beside its
//! stream `<pid>.<start ns>.evt`: its rank and the offsets of its clock from rank 0's, measured
//! at `MPI_Init` and `MPI_Finalize` (format in `iolens_import`'s `mpi_clock` module).
//!
//! One process (or one thread) writes one stream; a trace is a set of streams whose path ids
//! are local to each stream (readers map them through the stream's own table).
//!
//! The parts: `model` holds the events and what they name (operations, layers, flags, the path
//! table), `encode` the writer and the frame encoders, `decode` the reader, and `block` the
//! clock segment and predictor compact events are coded against on both sides.

mod block;
mod decode;
mod encode;
mod model;
#[cfg(test)]
mod tests;

pub use block::{Predictor, TickLine};
pub use decode::EventReader;
pub use encode::{
    encode_block_header, encode_compact, encode_event, encode_excluded, encode_lost, EventWriter,
};
pub use model::*;

/// The magic of the stream version writers produce.
pub const EVENT_MAGIC: &[u8; 8] = b"IOLEVT02";
/// The magic of version 1 streams (no blocks, no compact events), still read.
pub const EVENT_MAGIC_V1: &[u8; 8] = b"IOLEVT01";
/// What every version's magic starts with: a stream of an unknown version is told apart from
/// a file that is no event stream at all.
pub const EVENT_MAGIC_PREFIX: &[u8; 6] = b"IOLEVT";
pub const NO_FILE: u32 = u32::MAX;
pub const UNKNOWN_OFFSET: u64 = u64::MAX;
pub const EVENT_FRAME_LEN: usize = 65;

pub(super) const TAG_EVENT: u8 = 1;
pub(super) const TAG_PATH: u8 = 2;
pub(super) const TAG_DROPPED: u8 = 3;
pub(super) const TAG_EXCLUDED: u8 = 4;
pub(super) const TAG_LOST: u8 = 5;
pub(super) const TAG_BLOCK: u8 = 6;
/// Tags with this bit set are compact events; the other bits carry flags, layer and op.
pub(super) const TAG_COMPACT: u8 = 0x80;
/// Tags from this one to 0x7f are short compact events; the other bits carry layer and op.
pub(super) const TAG_SHORT: u8 = 0x40;
/// Length of a short compact event, its tag included.
pub const SHORT_EVENT_LEN: usize = 5;
/// Length of a block header, its tag included.
pub const BLOCK_HEADER_LEN: usize = 41;
/// The most bytes a compact event takes (tag, 3 bytes of lengths, 6 fields, flags). The
/// encoder writes each field as 8 bytes and keeps the ones that count, so it needs this much
/// room whatever the event.
pub const COMPACT_EVENT_MAX_LEN: usize = 4 + 8 * COMPACT_FIELDS + 2;
/// Fields of a compact event, flags aside.
pub(super) const COMPACT_FIELDS: usize = 6;
/// Tag bit of a compact event: flags follow its fields.
pub(super) const COMPACT_FLAGGED: u8 = 0x40;
/// Length of an excluded-calls frame, its tag included.
pub const EXCLUDED_FRAME_LEN: usize = 18;
/// Length of a lost-events frame, its tag included.
pub const LOST_FRAME_LEN: usize = 13;
