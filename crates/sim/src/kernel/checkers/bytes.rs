//! Bytes: a successful request moved exactly what its source held when it was posted.

use unpinned_core::time::Instant;

use super::Ev;
use crate::kernel::check::Checker;
use crate::kernel::request::Requests;

/// Compares each [`Ev::Bytes`] observation's expected and delivered bytes.
pub struct Bytes;

impl Checker<Requests> for Bytes {
    fn name(&self) -> &'static str {
        "bytes"
    }

    fn observe(&mut self, _at: Instant, o: &Ev<'_>, out: &mut Vec<String>) {
        let Ev::Bytes { req, expected, got } = o else {
            return;
        };
        if expected != got {
            let first = expected
                .iter()
                .zip(got.iter())
                .position(|(a, b)| a != b)
                .unwrap_or(expected.len().min(got.len()));
            out.push(format!(
                "request {req} completed successfully but byte {first} of {} differs from what was sent ({} bytes at the destination)",
                expected.len(),
                got.len()
            ));
        }
    }
}
