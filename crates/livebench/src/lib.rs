//! Measurements on the live machine (issue 3): `unpinned calibrate` measures this machine's
//! component costs with real system calls and real faults and writes them as a simulator
//! profile, so the simulator can predict the live runtime; [`exp`] holds the live experiments
//! (`unpinned live EXPERIMENT`) and [`schemes`] the user-level baselines they compare PART
//! against (pre-touch, pin per transfer, a pin-down registration cache).

#![warn(missing_docs)]

pub mod bench;
pub mod calibrate;
pub mod exp;
pub mod netns;
mod os;
pub mod schemes;
