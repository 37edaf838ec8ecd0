//! Conformance scenarios as data: one description, run on every driver, with outcomes that
//! must agree (turmoil's "one test body, two backends"). Addresses are region-relative so that
//! the live runtime can place regions wherever its allocator puts them; contents are seeded
//! (the drivers fill region `i` with the same seeded bytes, `unpinned_sim::conformance::initial_bytes`).
//!
//! The outcome of a scenario is what a user can observe: each work request's status, and the
//! final bytes of every region (as a hash). Timing is not part of it. The simulator runs the
//! scenarios and computes the reference outcome (`unpinned_sim::conformance`); the live
//! runtime runs them in its tests (crates/live/tests/conformance.rs).
//!
//! Active Access scenarios are in [`active`], message-layer scenarios (with their expected
//! outcome) in [`msg`].
//!
//! This crate has no dependencies: its types are its own, converted by each driver.

#![warn(missing_docs)]

pub mod active;
pub mod msg;

/// A rank of a scenario.
pub type NodeId = u32;

/// What a request does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Local bytes to the remote region.
    Write,
    /// Remote bytes to the local region.
    Read,
}

/// Permissions of an exposure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Perms {
    /// Peers may read.
    pub read: bool,
    /// Peers may write.
    pub write: bool,
}

impl Perms {
    /// Read only.
    pub const R: Perms = Perms {
        read: true,
        write: false,
    };
    /// Write only.
    pub const W: Perms = Perms {
        read: false,
        write: true,
    };
    /// Read and write.
    pub const RW: Perms = Perms {
        read: true,
        write: true,
    };
}

/// Residency of a region when the scenario starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Start {
    /// Every page present (touched).
    Present,
    /// No page present (fresh memory, never touched).
    Fresh,
    /// Every other page present.
    Alternate,
}

/// A memory region of one node.
#[derive(Clone, Debug)]
pub struct Region {
    /// Owner.
    pub node: NodeId,
    /// Bytes.
    pub len: u64,
    /// Residency at the start.
    pub start: Start,
    /// Exposed to peers with these permissions (None: private).
    pub exposed: Option<Perms>,
}

/// One work request, in region-relative terms.
#[derive(Clone, Debug)]
pub struct Request {
    /// Posting node.
    pub node: NodeId,
    /// Write or read.
    pub op: Op,
    /// Local region index and offset.
    pub local: (usize, u64),
    /// Remote region index and offset (its owner is the peer).
    pub remote: (usize, u64),
    /// Bytes.
    pub len: u64,
    /// Present a wrong key.
    pub wrong_key: bool,
}

/// A scenario.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// Name.
    pub name: &'static str,
    /// Nodes (ranks).
    pub nodes: u32,
    /// Regions; their initial contents are seeded random bytes.
    pub regions: Vec<Region>,
    /// Requests, posted in order (each after the previous completed when `sequential`).
    pub requests: Vec<Request>,
    /// Post each request only after the previous one completed (outcomes independent of timing).
    pub sequential: bool,
}

/// The scenarios every driver must run identically.
pub fn scenarios() -> Vec<Scenario> {
    let rw = Some(Perms::RW);
    let req = |node, op, local, remote, len| Request {
        node,
        op,
        local,
        remote,
        len,
        wrong_key: false,
    };
    vec![
        Scenario {
            name: "write-fresh-and-present",
            nodes: 2,
            regions: vec![
                Region {
                    node: 0,
                    len: 256 << 10,
                    start: Start::Present,
                    exposed: None,
                },
                Region {
                    node: 1,
                    len: 256 << 10,
                    start: Start::Fresh,
                    exposed: rw,
                },
                Region {
                    node: 1,
                    len: 64 << 10,
                    start: Start::Present,
                    exposed: rw,
                },
            ],
            requests: vec![
                req(0, Op::Write, (0, 0), (1, 0), 1),
                req(0, Op::Write, (0, 100), (1, 4096 + 7), 40_000),
                req(0, Op::Write, (0, 0), (1, 64 << 10), 192 << 10),
                req(0, Op::Write, (0, 5), (2, 3), (64 << 10) - 3),
            ],
            sequential: true,
        },
        Scenario {
            name: "read-with-faults-on-both-sides",
            nodes: 2,
            regions: vec![
                Region {
                    node: 0,
                    len: 128 << 10,
                    start: Start::Fresh,
                    exposed: None,
                },
                Region {
                    node: 1,
                    len: 128 << 10,
                    start: Start::Alternate,
                    exposed: Some(Perms::R),
                },
            ],
            requests: vec![
                req(0, Op::Read, (0, 0), (1, 0), 128 << 10),
                req(0, Op::Read, (0, 1), (1, 4095), 3),
            ],
            sequential: true,
        },
        Scenario {
            name: "protection-errors-write-nothing",
            nodes: 2,
            regions: vec![
                Region {
                    node: 0,
                    len: 64 << 10,
                    start: Start::Present,
                    exposed: None,
                },
                Region {
                    node: 1,
                    len: 32 << 10,
                    start: Start::Present,
                    exposed: Some(Perms::R),
                },
                Region {
                    node: 1,
                    len: 32 << 10,
                    start: Start::Present,
                    exposed: rw,
                },
            ],
            requests: vec![
                // Write to a read-only exposure.
                req(0, Op::Write, (0, 0), (1, 0), 100),
                // Past the end of an exposure.
                req(0, Op::Write, (0, 0), (2, 1), 32 << 10),
                // Wrong key.
                Request {
                    wrong_key: true,
                    ..req(0, Op::Write, (0, 0), (2, 0), 10)
                },
                Request {
                    wrong_key: true,
                    ..req(0, Op::Read, (0, 0), (1, 0), 10)
                },
                // And one that is fine.
                req(0, Op::Write, (0, 0), (2, 0), 32 << 10),
            ],
            sequential: true,
        },
        Scenario {
            name: "three-ranks-into-one-target",
            nodes: 3,
            regions: vec![
                Region {
                    node: 0,
                    len: 64 << 10,
                    start: Start::Present,
                    exposed: None,
                },
                Region {
                    node: 1,
                    len: 64 << 10,
                    start: Start::Fresh,
                    exposed: None,
                },
                Region {
                    node: 2,
                    len: 256 << 10,
                    start: Start::Fresh,
                    exposed: rw,
                },
                Region {
                    node: 1,
                    len: 64 << 10,
                    start: Start::Fresh,
                    exposed: None,
                },
            ],
            // Concurrent requests touch disjoint bytes (as a correct program's would).
            requests: vec![
                req(0, Op::Write, (0, 0), (2, 0), 64 << 10),
                req(1, Op::Write, (1, 0), (2, 64 << 10), 64 << 10),
                req(0, Op::Write, (0, 17), (2, 128 << 10), 30_000),
                req(1, Op::Read, (3, 0), (2, 192 << 10), 64 << 10),
            ],
            sequential: false,
        },
    ]
}
