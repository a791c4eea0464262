//! Exercises the failure announcement of [`iolens_mpi::world::World`] under mpirun (run by
//! `tests/stop.rs`): the last rank announces a failure while the others "run" (poll as the
//! engine's collector does every 100 ms); every other rank must see it, then all pass two
//! barriers with no message left pending. Prints one line per rank.

use std::time::{Duration, Instant};

use iolens_engine::PhaseBarrier;
use iolens_mpi::world::World;

fn main() {
    let world = World::init().expect("MPI");
    let failing = world.size() - 1;
    world.wait("start");
    let t = Instant::now();
    if world.rank() == failing {
        std::thread::sleep(Duration::from_millis(200));
        world.announce_failure();
        world.announce_failure(); // a second announcement sends nothing more
    } else {
        while !world.peer_failed() {
            assert!(t.elapsed() < Duration::from_secs(10), "rank {}: no stop seen", world.rank());
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    world.wait("end");
    world.wait("again");
    println!("rank {} stopped after {} ms", world.rank(), t.elapsed().as_millis());
}
