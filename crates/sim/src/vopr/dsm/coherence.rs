//! The DSM swarm's vocabulary and its coherence checkers: what spec dsm.md promises ("single
//! writer; reads may be shared"; sequentially consistent), over the swarm's observations.
//!
//! - **single-writer**: while a node holds write access to a minipage, no other node holds
//!   any valid copy of it (checked after every protocol step and at every access), and only a
//!   node with write access writes.
//! - **latest-value**: accesses are instantaneous at the node that performs them, so the
//!   simulated order of accesses is a total order; every read must return, word for word, the
//!   value of the latest write to that word in that order (zeros before any write), and so
//!   must every valid copy when the run ends.

use unpinned_core::time::Instant;
use unpinned_dsm::Access;

use crate::kernel::{Checker, Checkers, Vocabulary};

/// The DSM swarm's vocabulary: observations are [`DsmEvent`]s.
pub struct Dsm;

impl Vocabulary for Dsm {
    type Event<'a> = DsmEvent<'a>;
}

/// One observation of the DSM swarm.
#[derive(Clone, Debug)]
pub enum DsmEvent<'a> {
    /// Every node's access to `mp` (after a protocol step).
    State {
        /// Minipage.
        mp: u32,
        /// Per node.
        access: &'a [Access],
    },
    /// Node `node` wrote `value` into `word` of `mp`; `access`: every node's access then.
    Write {
        /// Node.
        node: u32,
        /// Minipage.
        mp: u32,
        /// Word (8 bytes).
        word: u32,
        /// Value.
        value: u64,
        /// Per node.
        access: &'a [Access],
    },
    /// Node `node` read `bytes` (the whole minipage) of `mp`; `final_copy`: a valid copy
    /// inspected when the run ended, not a thread's read.
    Read {
        /// Node.
        node: u32,
        /// Minipage.
        mp: u32,
        /// The bytes.
        bytes: &'a [u8],
        /// Per node.
        access: &'a [Access],
        /// A copy at the end of the run.
        final_copy: bool,
    },
}

/// The swarm's checkers.
pub(crate) fn checkers(minipages: u32, mp_bytes: u32) -> Checkers<Dsm> {
    let mut c = Checkers::new();
    c.add(Box::new(SingleWriter))
        .add(Box::new(LatestValue::new(minipages, mp_bytes)));
    c
}

/// At most one node with write access to `mp`, and then no other valid copy.
fn single_writer(mp: u32, access: &[Access]) -> Option<String> {
    let w = access.iter().position(|&a| a == Access::Write)?;
    let others: Vec<usize> = (0..access.len())
        .filter(|&i| access[i] != Access::None && i != w)
        .collect();
    (!others.is_empty()).then(|| {
        format!(
            "minipage {mp} is writable at node {w} while nodes {others:?} hold copies ({access:?})"
        )
    })
}

/// One writer per minipage, and nobody else writes.
struct SingleWriter;

impl Checker<Dsm> for SingleWriter {
    fn name(&self) -> &'static str {
        "single-writer"
    }

    fn observe(&mut self, _at: Instant, o: &DsmEvent<'_>, out: &mut Vec<String>) {
        let (mp, access) = match o {
            DsmEvent::State { mp, access } => (*mp, *access),
            DsmEvent::Write {
                node, mp, access, ..
            } => {
                if access[*node as usize] != Access::Write {
                    out.push(format!(
                        "node {node} writes minipage {mp} with access {:?}",
                        access[*node as usize]
                    ));
                }
                (*mp, *access)
            }
            DsmEvent::Read {
                node, mp, access, ..
            } => {
                if access[*node as usize] == Access::None {
                    out.push(format!(
                        "node {node} reads minipage {mp} without a valid copy"
                    ));
                }
                (*mp, *access)
            }
        };
        out.extend(single_writer(mp, access));
    }
}

/// The latest value of every word of every minipage, and who wrote it.
struct LatestValue {
    /// Per minipage, per 8-byte word: (value, writer node).
    words: Vec<Vec<(u64, Option<u32>)>>,
}

impl LatestValue {
    fn new(minipages: u32, mp_bytes: u32) -> LatestValue {
        LatestValue {
            words: (0..minipages)
                .map(|_| vec![(0, None); (mp_bytes / 8) as usize])
                .collect(),
        }
    }
}

impl Checker<Dsm> for LatestValue {
    fn name(&self) -> &'static str {
        "latest-value"
    }

    fn observe(&mut self, _at: Instant, o: &DsmEvent<'_>, out: &mut Vec<String>) {
        match o {
            DsmEvent::State { .. } => {}
            DsmEvent::Write {
                node,
                mp,
                word,
                value,
                ..
            } => self.words[*mp as usize][*word as usize] = (*value, Some(*node)),
            DsmEvent::Read {
                node,
                mp,
                bytes,
                final_copy,
                ..
            } => {
                for (w, &(want, by)) in self.words[*mp as usize].iter().enumerate() {
                    let got =
                        u64::from_le_bytes(bytes[w * 8..w * 8 + 8].try_into().expect("8 bytes"));
                    if got != want {
                        out.push(format!(
                            "{} node {node}: minipage {mp} word {w} is {got:#x}, the latest write {} put {want:#x}",
                            if *final_copy { "final copy at" } else { "stale read at" },
                            match by {
                                Some(b) => format!("(by node {b})"),
                                None => "(none: initial zeros)".into(),
                            }
                        ));
                        return;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Access::*;

    #[test]
    fn the_checkers_catch_two_writers_a_reader_beside_a_writer_and_a_stale_read() {
        let mut c = checkers(1, 16);
        let t = Instant(1);
        c.observe(
            t,
            &DsmEvent::State {
                mp: 0,
                access: &[Write, None],
            },
        );
        c.observe(
            t,
            &DsmEvent::State {
                mp: 0,
                access: &[Read, Read],
            },
        );
        assert!(c.is_clean());
        c.observe(
            t,
            &DsmEvent::State {
                mp: 0,
                access: &[Write, Read],
            },
        );
        assert_eq!(c.count(), 1);
        c.observe(
            t,
            &DsmEvent::Write {
                node: 1,
                mp: 0,
                word: 0,
                value: 7,
                access: &[Read, Read],
            },
        );
        assert_eq!(c.count(), 2, "a write without write access");
        c.observe(
            t,
            &DsmEvent::Write {
                node: 0,
                mp: 0,
                word: 1,
                value: 9,
                access: &[Write, None],
            },
        );
        let mut b = [0u8; 16];
        b[8..].copy_from_slice(&9u64.to_le_bytes());
        // The write of node 1 above also counts as the latest of word 0.
        b[..8].copy_from_slice(&7u64.to_le_bytes());
        let read = |bytes| DsmEvent::Read {
            node: 1,
            mp: 0,
            bytes,
            access: &[Read, Read],
            final_copy: false,
        };
        c.observe(t, &read(&b));
        assert_eq!(c.count(), 2);
        c.observe(t, &read(&[0u8; 16]));
        assert_eq!(c.count(), 3, "a stale read");
        assert_eq!(c.violations()[2].checker, "latest-value");
    }
}
