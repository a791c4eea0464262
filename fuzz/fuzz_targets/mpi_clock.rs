//! The MPI clock files the preload leaves beside each rank's stream: parsing never panics, and
//! a parsed clock maps any time without overflowing.
#![no_main]

use iolens_import::mpi_clock::RankClock;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(clock) = RankClock::parse(&String::from_utf8_lossy(data)) {
        assert!(clock.rank < clock.size);
        for t in [0, 1, u64::MAX / 2, u64::MAX] {
            let _ = clock.to_rank0(t);
        }
    }
});
