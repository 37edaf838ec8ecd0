//! Reassembly of multi-transaction accesses into whole log entries (spec "Access log": "a put
//! whose data spans several bus transactions is reassembled in order; transactions from
//! different sources may interleave").
//!
//! The first packet of an access (whichever arrives first) reserves the whole entry; each
//! packet writes its bytes at its offset; the entry is published when the last byte is in.
//! Packets are identified by (source, txn, offset), so a duplicated packet (a retransmission
//! of a reliable network) is recognised and ignored rather than counted twice.
//!
//! Completed accesses are remembered so that a late duplicate is not logged as a new access,
//! but only the most recent [`DONE_KEEP_DEFAULT`] of them (per log): a long-running target
//! would otherwise grow without bound. A duplicate can only follow its access's completion
//! while the source still resends (at most `max_timeouts` block timeouts, ~100s of us); for
//! it to be taken for a new access, more than [`DONE_KEEP_DEFAULT`] other accesses would have
//! to complete at this log in that time. Transfer ids cannot serve as a watermark instead:
//! a source numbers its gets, and its transfers to other targets, in the same id space, so
//! the ids one log sees have gaps that never fill.

use std::collections::VecDeque;

use rustc_hash::{FxHashMap, FxHashSet};

use crate::log::{AccessLog, Backpressure, EntryHeader, Reservation};

/// One bus transaction (packet) of a logged access.
#[derive(Clone, Copy, Debug)]
pub struct Fragment<'a> {
    /// Metadata of the whole access (same in every fragment).
    pub header: EntryHeader,
    /// Offset of this fragment's data within the access.
    pub offset: u32,
    /// The data.
    pub data: &'a [u8],
}

/// What happened to a fragment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FragmentOutcome {
    /// Written; the entry is still incomplete.
    Accepted,
    /// Written, and it completed (and possibly published) the entry.
    Completed,
    /// Already seen (duplicate): ignored.
    Duplicate,
}

struct Open {
    res: Reservation,
    /// Offsets already written.
    seen: FxHashSet<u32>,
}

/// Completed accesses a [`Reassembler`] remembers by default (at ~24 bytes each, under 2 MiB).
pub const DONE_KEEP_DEFAULT: usize = 1 << 16;

/// Open entries of one log, keyed by (source, txn).
pub struct Reassembler {
    open: FxHashMap<(u32, u32), Open>,
    /// Accesses completed; kept so that late duplicates are not taken for new accesses.
    done: FxHashSet<(u32, u32)>,
    /// The keys of `done` in completion order, oldest first (forgotten first).
    done_order: VecDeque<(u32, u32)>,
    /// How many completed accesses `done` keeps.
    done_keep: usize,
}

impl Default for Reassembler {
    fn default() -> Reassembler {
        Reassembler::with_done_keep(DONE_KEEP_DEFAULT)
    }
}

impl Reassembler {
    /// An empty reassembler that remembers the last [`DONE_KEEP_DEFAULT`] completed accesses.
    pub fn new() -> Reassembler {
        Reassembler::default()
    }

    /// An empty reassembler that remembers the last `done_keep` (at least 1) completed
    /// accesses.
    pub fn with_done_keep(done_keep: usize) -> Reassembler {
        Reassembler {
            open: FxHashMap::default(),
            done: FxHashSet::default(),
            done_order: VecDeque::new(),
            done_keep: done_keep.max(1),
        }
    }

    /// Completed accesses remembered for duplicate detection (at most the `done_keep`).
    pub fn done_entries(&self) -> usize {
        self.done.len()
    }

    fn mark_done(&mut self, key: (u32, u32)) {
        if self.done.insert(key) {
            self.done_order.push_back(key);
            if self.done_order.len() > self.done_keep {
                let old = self
                    .done_order
                    .pop_front()
                    .expect("longer than done_keep >= 1");
                self.done.remove(&old);
            }
        }
    }

    /// Accesses with a reservation but not all bytes yet.
    pub fn open_entries(&self) -> usize {
        self.open.len()
    }

    /// Feed one fragment. On [`Backpressure`] nothing changed: the caller holds the fragment
    /// and retries after the handler has consumed entries.
    pub fn on_fragment(
        &mut self,
        log: &mut AccessLog,
        f: Fragment,
    ) -> Result<FragmentOutcome, Backpressure> {
        let key = (f.header.source, f.header.txn);
        if self.done.contains(&key) {
            return Ok(FragmentOutcome::Duplicate);
        }
        if !self.open.contains_key(&key) {
            let res = log.reserve(f.header)?;
            if f.header.data_len == 0 {
                self.mark_done(key);
                return Ok(FragmentOutcome::Completed);
            }
            self.open.insert(
                key,
                Open {
                    res,
                    seen: FxHashSet::default(),
                },
            );
        }
        let open = self.open.get_mut(&key).expect("inserted above");
        if !open.seen.insert(f.offset) {
            return Ok(FragmentOutcome::Duplicate);
        }
        if log.write(&open.res, f.offset, f.data) {
            self.open.remove(&key);
            self.mark_done(key);
            Ok(FragmentOutcome::Completed)
        } else {
            Ok(FragmentOutcome::Accepted)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::EntryKind;
    use rand::{seq::SliceRandom, Rng, SeedableRng};
    use unpinned_core::rng::SimRng;

    #[test]
    fn interleaved_puts_from_many_sources_reassemble() {
        for seed in 0..20u64 {
            let mut rng = SimRng::seed_from_u64(seed);
            let mut log = AccessLog::new(1 << 16);
            let mut re = Reassembler::new();
            // 8 sources x 5 puts of 1..6 packets of 64 bytes; packet order per access is
            // shuffled and all accesses interleave; some packets duplicated.
            let mut frags = Vec::new();
            let mut expect = FxHashMap::default();
            for src in 0..8u32 {
                for txn in 0..5u32 {
                    let n = rng.gen_range(1..=6u32);
                    let data: Vec<u8> = (0..n * 64).map(|_| rng.gen()).collect();
                    let header = EntryHeader {
                        kind: EntryKind::ActivePut,
                        source: src,
                        txn,
                        addr: 0x9000,
                        access_len: n * 64,
                        data_len: n * 64,
                    };
                    for p in 0..n {
                        frags.push((
                            header,
                            p * 64,
                            data[(p * 64) as usize..((p + 1) * 64) as usize].to_vec(),
                        ));
                        if rng.gen_bool(0.2) {
                            frags.push((
                                header,
                                p * 64,
                                data[(p * 64) as usize..((p + 1) * 64) as usize].to_vec(),
                            ));
                        }
                    }
                    expect.insert((src, txn), data);
                }
            }
            frags.shuffle(&mut rng);
            for (h, off, d) in &frags {
                re.on_fragment(
                    &mut log,
                    Fragment {
                        header: *h,
                        offset: *off,
                        data: d,
                    },
                )
                .unwrap();
            }
            assert_eq!(re.open_entries(), 0, "seed {seed}");
            let mut got = 0;
            while let Some(e) = log.pop() {
                assert_eq!(
                    &e.data,
                    &expect[&(e.header.source, e.header.txn)],
                    "seed {seed}"
                );
                got += 1;
            }
            assert_eq!(got, 40, "seed {seed}: every access exactly once");
        }
    }

    #[test]
    fn done_set_stays_bounded_and_recent_duplicates_are_still_caught() {
        let mut log = AccessLog::new(1 << 12);
        let mut re = Reassembler::with_done_keep(8);
        let d = [7u8; 16];
        let frag = |txn| Fragment {
            header: EntryHeader {
                kind: EntryKind::ActivePut,
                source: 3,
                txn,
                addr: 0,
                access_len: 16,
                data_len: 16,
            },
            offset: 0,
            data: &d,
        };
        for txn in 0..100u32 {
            assert_eq!(
                re.on_fragment(&mut log, frag(txn)),
                Ok(FragmentOutcome::Completed)
            );
            assert!(log.pop().is_some());
            assert!(re.done_entries() <= 8, "txn {txn}: {}", re.done_entries());
            // A late duplicate of each of the last 8 completions is still recognised.
            for back in 0..8u32.min(txn + 1) {
                assert_eq!(
                    re.on_fragment(&mut log, frag(txn - back)),
                    Ok(FragmentOutcome::Duplicate),
                    "txn {txn}, {back} back"
                );
            }
            assert!(log.pop().is_none(), "a duplicate was logged");
        }
        assert_eq!(re.done_entries(), 8);
    }

    #[test]
    fn backpressured_fragment_is_retried_without_loss() {
        let mut log = AccessLog::new(32 + 64);
        let mut re = Reassembler::new();
        let h = |txn| EntryHeader {
            kind: EntryKind::ActivePut,
            source: 1,
            txn,
            addr: 0,
            access_len: 64,
            data_len: 64,
        };
        let d = [9u8; 64];
        assert_eq!(
            re.on_fragment(
                &mut log,
                Fragment {
                    header: h(0),
                    offset: 0,
                    data: &d
                }
            ),
            Ok(FragmentOutcome::Completed)
        );
        assert!(re
            .on_fragment(
                &mut log,
                Fragment {
                    header: h(1),
                    offset: 0,
                    data: &d
                }
            )
            .is_err());
        assert_eq!(log.pop().unwrap().header.txn, 0);
        assert_eq!(
            re.on_fragment(
                &mut log,
                Fragment {
                    header: h(1),
                    offset: 0,
                    data: &d
                }
            ),
            Ok(FragmentOutcome::Completed)
        );
        assert_eq!(log.pop().unwrap().header.txn, 1);
    }
}
