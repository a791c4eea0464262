//! Calls that arrive in start order only within a window, put back in start order before they
//! are swept. A trace of several agents or threads is written in blocks, one thread's calls in
//! each: every block is in start order, the blocks of different threads interleave.
//!
//! One stage serves all the unions of a class (the aggregate, its layers, files and processes),
//! so a call is ordered once, not once per union. Waiting calls are kept in lanes, each in start
//! order: a call joins the lane it continues, so interleaved blocks of k threads make about k
//! lanes, and releasing the earliest calls is a k-way merge that moves each call once. Calls
//! that fit no lane while [`MAX_LANES`] are in use wait unsorted and are sorted when released,
//! so disorder of any shape costs no more than sorting the window.

use std::collections::VecDeque;

/// Something with a start time, by which [`StartOrder`] orders it.
pub trait Starts: Copy {
    fn start(&self) -> u64;
}

impl Starts for iolens_record::busy::Interval {
    #[inline(always)]
    fn start(&self) -> u64 {
        self.start
    }
}

/// Lanes kept before calls that fit none wait unsorted: enough for the threads of a trace to
/// interleave without a sort, few enough that finding a call's lane stays cheap.
pub const MAX_LANES: usize = 64;

/// Room a lane keeps whatever it holds.
const SMALL_LANE: usize = 64;

/// Items in start order within a window. When twice `window` wait, the `window` earliest are
/// released, in start order; an item starting before the last one released cannot be put in
/// order any more: it is refused and the stage says so ([`StartOrder::ordered`]). Memory: at
/// most twice `window` items, in lanes with room for at most four times what they hold.
#[derive(Debug)]
pub struct StartOrder<T> {
    lanes: Vec<VecDeque<T>>,
    /// The lane the last item joined: the next one most often continues it.
    last_lane: usize,
    /// Items that fit no lane while `MAX_LANES` were in use.
    unsorted: Vec<T>,
    waiting: usize,
    window: usize,
    /// The start of the last item released.
    floor: u64,
    out_of_order: bool,
}

impl<T: Starts> StartOrder<T> {
    /// A stage releasing `window` items (at least one) at a time.
    pub fn new(window: usize) -> StartOrder<T> {
        StartOrder {
            lanes: Vec::new(),
            last_lane: 0,
            unsorted: Vec::new(),
            waiting: 0,
            window: window.max(1),
            floor: 0,
            out_of_order: false,
        }
    }

    /// Takes `item`; false (and the stage out of order for good) when it starts before an item
    /// already released.
    #[inline]
    pub fn push(&mut self, item: T) -> bool {
        let start = item.start();
        if start < self.floor {
            self.out_of_order = true;
            return false;
        }
        self.waiting += 1;
        match self.lanes.get_mut(self.last_lane) {
            Some(lane) if lane.back().is_some_and(|last| last.start() <= start) => lane.push_back(item),
            _ => self.place(item, start),
        }
        true
    }

    /// Puts `item` at the end of the lane whose last item starts latest but not after it, or in
    /// an empty or new lane, or with the unsorted ones.
    #[cold]
    #[inline(never)]
    fn place(&mut self, item: T, start: u64) {
        let mut best: Option<(usize, u64)> = None;
        let mut empty = None;
        for (i, lane) in self.lanes.iter().enumerate() {
            match lane.back().map(Starts::start) {
                Some(last) if last <= start && best.is_none_or(|(_, b)| last > b) => best = Some((i, last)),
                None if empty.is_none() => empty = Some(i),
                _ => {}
            }
        }
        let lane = match (best, empty) {
            (Some((i, _)), _) | (None, Some(i)) => i,
            (None, None) if self.lanes.len() < MAX_LANES => {
                self.lanes.push(VecDeque::new());
                self.lanes.len() - 1
            }
            (None, None) => {
                self.unsorted.push(item);
                return;
            }
        };
        self.lanes[lane].push_back(item);
        self.last_lane = lane;
    }

    /// Whether twice the window waits: time to [`StartOrder::release`] the window.
    #[inline]
    pub fn full(&self) -> bool {
        self.waiting >= 2 * self.window
    }

    /// The window's size: how many items a release of a full stage gives.
    pub fn window(&self) -> usize {
        self.window
    }

    /// Moves the `n` earliest-starting waiting items (fewer if fewer wait) to `out`, in start
    /// order.
    pub fn release(&mut self, n: usize, out: &mut Vec<T>) {
        if !self.unsorted.is_empty() {
            self.sort_unsorted_into_a_lane();
        }
        let mut n = n.min(self.waiting);
        self.waiting -= n;
        while n > 0 {
            // The lane with the earliest first item gives items up to the next lane's first.
            let mut first: Option<(usize, u64)> = None;
            let mut second = u64::MAX;
            for (i, lane) in self.lanes.iter().enumerate() {
                let Some(head) = lane.front() else { continue };
                let start = head.start();
                match first {
                    Some((_, f)) if f <= start => second = second.min(start),
                    _ => {
                        if let Some((_, f)) = first {
                            second = f;
                        }
                        first = Some((i, start));
                    }
                }
            }
            let (i, _) = first.expect("items wait while n > 0");
            let lane = &mut self.lanes[i];
            while n > 0 && lane.front().is_some_and(|head| head.start() <= second) {
                let item = lane.pop_front().expect("checked above");
                self.floor = self.floor.max(item.start());
                out.push(item);
                n -= 1;
            }
        }
        self.lanes.retain(|lane| !lane.is_empty());
        for lane in &mut self.lanes {
            // A lane keeps room for at most four times what it holds: the lanes together stay
            // within a few times the window, however long each once was. Shrinking copies
            // what is left, at most a quarter of what was popped since the room was made.
            if lane.capacity() > SMALL_LANE && lane.capacity() / 4 > lane.len() {
                lane.shrink_to(2 * lane.len());
            }
        }
        self.last_lane = self.lanes.len().saturating_sub(1);
    }

    /// Merges the unsorted items and every lane into one lane (the lanes are sorted runs, which
    /// the sort merges).
    #[cold]
    fn sort_unsorted_into_a_lane(&mut self) {
        let mut all = std::mem::take(&mut self.unsorted);
        for lane in self.lanes.drain(..) {
            all.extend(lane);
        }
        all.sort_by_key(Starts::start);
        self.lanes.push(VecDeque::from(all));
        self.last_lane = 0;
    }

    /// Whether no item was refused.
    pub fn ordered(&self) -> bool {
        !self.out_of_order
    }

    /// Takes on the refusals of the stage of a later part of the trace, both released to the
    /// last item (as a merge of analyzers does first): a call one refused makes the whole out
    /// of order.
    pub fn absorb(&mut self, later: &StartOrder<T>) {
        debug_assert!(self.waiting == 0 && later.waiting == 0, "stages are released before a merge");
        self.out_of_order |= later.out_of_order;
        self.floor = self.floor.max(later.floor);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
    struct Item {
        start: u64,
        arrival: usize,
    }

    impl Starts for Item {
        fn start(&self) -> u64 {
            self.start
        }
    }

    /// What a stage does, told the simple way: on each full window the waiting items are
    /// sorted and the earlier half goes out.
    fn sorting_model(items: &[Item], window: usize) -> (Vec<Item>, bool) {
        let mut waiting: Vec<Item> = Vec::new();
        let mut out = Vec::new();
        let mut floor = 0;
        let mut ordered = true;
        for &item in items {
            if item.start < floor {
                ordered = false;
                continue;
            }
            waiting.push(item);
            if waiting.len() >= 2 * window {
                waiting.sort_by_key(|i| i.start);
                let released: Vec<Item> = waiting.drain(..window).collect();
                floor = floor.max(released.last().map_or(0, |i| i.start));
                out.extend(released);
            }
        }
        waiting.sort_by_key(|i| i.start);
        out.extend(waiting);
        (out, ordered)
    }

    fn staged(items: &[Item], window: usize) -> (Vec<Item>, bool) {
        let mut stage = StartOrder::new(window);
        let mut out = Vec::new();
        for &item in items {
            stage.push(item);
            if stage.full() {
                // Released in pieces, as the analyzer does.
                let mut left = stage.window();
                while left > 0 {
                    let before = out.len();
                    stage.release(left.min(3), &mut out);
                    left -= out.len() - before;
                }
            }
        }
        stage.release(usize::MAX, &mut out);
        assert_eq!(stage.waiting, 0);
        (out, stage.ordered())
    }

    fn starts(items: &[Item]) -> Vec<u64> {
        items.iter().map(|i| i.start).collect()
    }

    proptest! {
        #[test]
        fn releases_what_sorting_the_window_releases(
            streams in prop::collection::vec(prop::collection::vec(0u64..50, 0..120), 1..(MAX_LANES + 8)),
            block in 1usize..30,
            jitter in prop::collection::vec(0u64..40, 0..40),
            window in 1usize..200,
        ) {
            // Each stream in start order, written block by block, streams in turn; some items
            // moved back in time so that lanes split and, with many streams, overflow.
            let streams: Vec<Vec<u64>> = streams
                .iter()
                .map(|s| s.iter().scan(0, |t, d| { *t += d; Some(*t) }).collect())
                .collect();
            let mut arrival = Vec::new();
            for round in 0.. {
                let before = arrival.len();
                for s in &streams {
                    for &start in s.iter().skip(round * block).take(block) {
                        let back = jitter.get(arrival.len() % 97).copied().unwrap_or(0);
                        let n = arrival.len();
                        arrival.push(Item { start: start.saturating_sub(back), arrival: n });
                    }
                }
                if arrival.len() == before {
                    break;
                }
            }
            let (expected, model_ordered) = sorting_model(&arrival, window);
            let (got, ordered) = staged(&arrival, window);
            prop_assert_eq!(ordered, model_ordered);
            // The same starts in the same order; ties may come out in another order.
            prop_assert_eq!(starts(&got), starts(&expected));
            let (mut got, mut expected) = (got, expected);
            got.sort();
            expected.sort();
            prop_assert_eq!(got, expected);
        }
    }

    #[test]
    fn interleaved_blocks_of_two_threads_use_two_lanes() {
        let mut stage = StartOrder::new(1000);
        for block in 0..10u64 {
            for thread in 0..2u64 {
                for i in 0..50u64 {
                    assert!(stage.push(Item { start: block * 100 + i * 2 + thread, arrival: 0 }));
                }
            }
        }
        assert_eq!(stage.lanes.len(), 2);
        let mut out = Vec::new();
        stage.release(usize::MAX, &mut out);
        assert!(out.windows(2).all(|w| w[0].start <= w[1].start));
        assert_eq!(out.len(), 1000);
    }

    #[test]
    fn lanes_that_were_long_once_do_not_keep_their_room() {
        // A lane that held the whole window keeps a few calls (its thread goes on, slowly):
        // without giving its room back, each of `MAX_LANES` such lanes could hold room for
        // twice the window, far past the stage's bound.
        let window = 10_000;
        let mut stage = StartOrder::new(window);
        for start in 0..2 * window as u64 {
            stage.push(Item { start, arrival: 0 });
        }
        let mut out = Vec::new();
        stage.release(2 * window - 3, &mut out);
        assert_eq!(stage.lanes[0].len(), 3);
        assert!(stage.lanes[0].capacity() <= SMALL_LANE, "room for {}", stage.lanes[0].capacity());
    }

    #[test]
    fn an_item_before_the_released_ones_is_refused() {
        let mut stage = StartOrder::new(1);
        assert!(stage.push(Item { start: 10, arrival: 0 }));
        assert!(stage.push(Item { start: 20, arrival: 1 }));
        let mut out = Vec::new();
        stage.release(stage.window(), &mut out);
        assert_eq!(starts(&out), [10]);
        assert!(stage.push(Item { start: 10, arrival: 2 }), "ties with the released are in order");
        assert!(!stage.push(Item { start: 9, arrival: 3 }));
        assert!(!stage.ordered());
    }
}
