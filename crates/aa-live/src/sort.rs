//! The fault-tolerant parallel sort, live (spec active-access.md, "Use cases"; the
//! simulator's version is crates/aa's `sort`): a sample-free bucket sort of uniformly drawn
//! 8-byte keys whose exchange is made of gets, each rank fetching its bucket from every other
//! rank. The ranks' key regions are marked to log gets with their data
//! ([`crate::loggets::GetLogger`]), so a rank that loses its output rebuilds it from the
//! targets' logs alone, even after they reused their memory. The processes are run by
//! `unpinned-live-aa sort` (crates/aa-live/src/bin/aa.rs); this file holds the pure parts.

pub use unpinned_aa::sort::merge_runs;

/// Bucket `b` of `procs` holds the keys `k` with `splitters[b-1] <= k < splitters[b]`
/// (equal ranges of the key space: the keys are uniform).
pub fn splitters(procs: u32) -> Vec<u64> {
    let step = u64::MAX / procs.max(1) as u64;
    (1..procs.max(1) as u64).map(|b| b * step).collect()
}

/// The bucket of key `k`.
pub fn bucket_of(splitters: &[u64], k: u64) -> usize {
    splitters.partition_point(|&s| s <= k)
}

/// (byte offset, byte length) of each bucket in the sorted `keys`, as 8-byte words.
pub fn bucket_bounds(sorted: &[u64], splitters: &[u64]) -> Vec<(u64, u64)> {
    let mut out = Vec::with_capacity(splitters.len() + 1);
    let mut start = 0usize;
    for b in 0..=splitters.len() {
        let end = match splitters.get(b) {
            Some(&s) => sorted.partition_point(|&k| k < s),
            None => sorted.len(),
        };
        out.push((start as u64 * 8, (end - start) as u64 * 8));
        start = end;
    }
    out
}

/// Little-endian 8-byte words (a trailing partial word is ignored).
pub fn keys_from_bytes(b: &[u8]) -> Vec<u64> {
    b.chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_partition_the_keys_in_splitter_order() {
        let sp = splitters(3);
        let mut keys: Vec<u64> = (0..1000u64)
            .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15))
            .collect();
        keys.sort_unstable();
        let b = bucket_bounds(&keys, &sp);
        assert_eq!(b.len(), 3);
        assert_eq!(b.iter().map(|x| x.1).sum::<u64>(), 8000);
        for (i, &(off, len)) in b.iter().enumerate() {
            for k in &keys[off as usize / 8..(off + len) as usize / 8] {
                assert_eq!(bucket_of(&sp, *k), i);
            }
        }
    }
}
