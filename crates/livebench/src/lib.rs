//! Measurements on the live machine (issue 3): `unpinned calibrate` measures this machine's
//! component costs with real system calls and real faults and writes them as a simulator
//! profile, so the simulator can predict the live runtime.

#![warn(missing_docs)]

pub mod calibrate;
mod os;
