//! The coherence checker of the DSM swarm: what spec dsm.md promises ("single writer; reads
//! may be shared"; sequentially consistent), checked at every access and after every step.
//!
//! - **Single writer**: while a node holds write access to a minipage, no other node holds
//!   any valid copy of it.
//! - **Latest value**: accesses are instantaneous at the node that performs them, so the
//!   simulated order of accesses is a total order; every read must return, word for word, the
//!   value of the latest write to that word in that order (zeros before any write).

use unpinned_dsm::Access;

/// The latest value of every word of every minipage, and who wrote it.
pub(crate) struct Coherence {
    /// Per minipage, per 8-byte word: (value, writer node).
    words: Vec<Vec<(u64, Option<u32>)>>,
}

impl Coherence {
    pub(crate) fn new(nodes: u32, minipages: u32, mp_bytes: u32) -> Coherence {
        let _ = nodes;
        Coherence {
            words: (0..minipages)
                .map(|_| vec![(0, None); (mp_bytes / 8) as usize])
                .collect(),
        }
    }

    /// Node `n` writes `value` into `word` of `mp`; `access` is every node's access to `mp`.
    pub(crate) fn write(
        &mut self,
        n: u32,
        mp: u32,
        word: u32,
        value: u64,
        access: &[Access],
    ) -> Result<(), String> {
        if access[n as usize] != Access::Write {
            return Err(format!(
                "writes minipage {mp} with access {:?}",
                access[n as usize]
            ));
        }
        single_writer(mp, access)?;
        self.words[mp as usize][word as usize] = (value, Some(n));
        Ok(())
    }

    /// Node `n` read `bytes` (the whole minipage) of `mp`.
    pub(crate) fn read(
        &self,
        n: u32,
        mp: u32,
        bytes: &[u8],
        access: &[Access],
    ) -> Result<(), String> {
        if access[n as usize] == Access::None {
            return Err(format!("reads minipage {mp} without a valid copy"));
        }
        single_writer(mp, access)?;
        for (w, &(want, by)) in self.words[mp as usize].iter().enumerate() {
            let got = u64::from_le_bytes(bytes[w * 8..w * 8 + 8].try_into().expect("8 bytes"));
            if got != want {
                return Err(format!(
                    "stale read: minipage {mp} word {w} is {got:#x}, the latest write {} put {want:#x}",
                    match by {
                        Some(b) => format!("(by node {b})"),
                        None => "(none: initial zeros)".into(),
                    }
                ));
            }
        }
        Ok(())
    }
}

/// At most one node with write access to `mp`, and then no other valid copy.
pub(crate) fn single_writer(mp: u32, access: &[Access]) -> Result<(), String> {
    let writers: Vec<usize> = (0..access.len())
        .filter(|&i| access[i] == Access::Write)
        .collect();
    if writers.is_empty() {
        return Ok(());
    }
    let others: Vec<usize> = (0..access.len())
        .filter(|&i| access[i] != Access::None && i != writers[0])
        .collect();
    if others.is_empty() {
        return Ok(());
    }
    Err(format!(
        "single writer broken: minipage {mp} is writable at node {} while nodes {others:?} hold copies ({access:?})",
        writers[0]
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use Access::*;

    #[test]
    fn the_checker_catches_two_writers_a_reader_beside_a_writer_and_a_stale_read() {
        assert!(single_writer(0, &[Write, None, None]).is_ok());
        assert!(single_writer(0, &[Read, Read, None]).is_ok());
        assert!(single_writer(0, &[Write, Write, None]).is_err());
        assert!(single_writer(0, &[Write, Read, None]).is_err());
        let mut c = Coherence::new(2, 1, 16);
        assert!(c.write(1, 0, 0, 7, &[Read, Read]).is_err());
        c.write(0, 0, 1, 9, &[Write, None]).unwrap();
        let mut b = [0u8; 16];
        b[8..].copy_from_slice(&9u64.to_le_bytes());
        assert!(c.read(1, 0, &b, &[Read, Read]).is_ok());
        assert!(c.read(1, 0, &[0u8; 16], &[Read, Read]).is_err());
        assert!(c.read(1, 0, &b, &[Read, None]).is_err());
    }
}
