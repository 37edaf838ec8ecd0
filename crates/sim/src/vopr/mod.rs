//! The VOPR (issue 18; TigerBeetle's Viewstamped Operation Replicator is the model): one seed
//! picks a whole swarm for a protocol (fault mix and rates, page evictions during transfers,
//! policies, sizes, requests designed to fail), runs a safety phase with faults on, then a
//! liveness phase with faults off, and the kernel's checkers judge it
//! ([`crate::kernel::checkers`]).
//!
//! - [`registry`]: the protocols by name (`part`, `rc`; the other worlds add a line there).
//! - [`report`]: what one seed gives ([`SeedReport`]) and the tally of request outcomes.
//! - [`run`]: many seeds, failures collected, one rerun command per failing seed.
//! - [`part`]: the PART swarm; [`rc`]: the RC/ODP swarm; [`aa`]: the Active Access swarm;
//!   [`dsm`]: the DSM swarm (coherence under loss, duplication and reordering).
//! - `common`: what the drivers share (transport requests and their bytes check, PART
//!   outcomes, the PART world of the AA and DSM swarms, residency, the seed's report).

pub mod aa;
mod common;
pub mod dsm;
pub mod part;
pub mod rc;
pub mod registry;
pub mod report;
pub mod run;

pub use registry::{protocol, protocols, Protocol};
pub use report::{SeedReport, Tally};
pub use run::{rerun_command, run_seeds, summarize, Summary};
