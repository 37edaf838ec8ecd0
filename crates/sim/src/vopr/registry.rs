//! The protocols the VOPR knows, by name. A world adds itself with one entry: its name, a
//! line about what its swarm covers, and the function that runs one seed.

use super::report::SeedReport;

/// One protocol's entry.
#[derive(Clone, Copy, Debug)]
pub struct Protocol {
    /// Name on the command line (`unpinned vopr --protocol NAME`).
    pub name: &'static str,
    /// What its swarm covers, one line.
    pub about: &'static str,
    /// Run one seed: safety phase, liveness phase, checkers.
    pub run: fn(u64) -> SeedReport,
}

/// Every registered protocol, in the order `--protocol all` runs them.
pub fn protocols() -> &'static [Protocol] {
    &[
        Protocol {
            name: "part",
            about: "PART engines on 2-4 nodes: writes and reads, page evictions during transfers, \
                    page-in policies, both retransmission policies; bad key, out of range, \
                    revoked and read-only exposures",
            run: super::part::run,
        },
        Protocol {
            name: "rc",
            about: "InfiniBand RC with ODP on 2 nodes: READs and WRITEs on several QPs, \
                    translations invalidated during transfers, vendor profiles, loss model and \
                    software-timer fix; bad key, out of range and read-only regions",
            run: super::rc::run,
        },
        Protocol {
            name: "aa",
            about: "Active Access (crates/aa's IOMMU decision, logs, reassembly) in front of PART \
                    engines on 2-4 nodes: puts and gets on plain, tracked, logged, active, \
                    counted and fault pages, small logs (back-pressure), evictions; bad key, \
                    out of range, read-only and revoked exposures, missing logs",
            run: super::aa::run,
        },
        Protocol {
            name: "dsm",
            about: "the DSM coherence protocol on 2-4 nodes over the live DSM's transport \
                    (mailbox rings, data writes, RDMA reads) on PART engines: random reads and \
                    writes of shared minipages; single writer and latest value checked",
            run: super::dsm::run,
        },
    ]
}

/// The protocol named `name`.
pub fn protocol(name: &str) -> Option<&'static Protocol> {
    protocols().iter().find(|p| p.name == name)
}
