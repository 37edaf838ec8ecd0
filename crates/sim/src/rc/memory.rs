//! Host memory of an RC node: real bytes, sparse by page. Residency is not modelled here: with
//! ODP the question is whether the NIC has a translation, which `unpinned_ib::odp` decides; the
//! cost of bringing a page in is the profile's fault-resolution time.

use rustc_hash::FxHashMap;
use unpinned_core::memory::{page_of, MemError, Memory, Pdid, PAGE_BYTES};

/// Sparse byte-accurate memory; never-written bytes read as zero.
#[derive(Default)]
pub struct HostMemory {
    pages: FxHashMap<(Pdid, u64), Box<[u8]>>,
}

impl HostMemory {
    /// Empty memory.
    pub fn new() -> HostMemory {
        HostMemory::default()
    }
    fn each<F: FnMut(&mut [u8], usize)>(&mut self, pdid: Pdid, addr: u64, len: usize, mut f: F) {
        let mut done = 0usize;
        while done < len {
            let a = addr + done as u64;
            let p = page_of(a);
            let off = (a - p) as usize;
            let n = (PAGE_BYTES as usize - off).min(len - done);
            let page = self
                .pages
                .entry((pdid, p))
                .or_insert_with(|| vec![0u8; PAGE_BYTES as usize].into_boxed_slice());
            f(&mut page[off..off + n], done);
            done += n;
        }
    }
}

impl Memory for HostMemory {
    fn write(&mut self, pdid: Pdid, addr: u64, data: &[u8]) -> Result<(), MemError> {
        if addr.checked_add(data.len() as u64).is_none() {
            return Err(MemError::Unmapped { addr });
        }
        self.each(pdid, addr, data.len(), |dst, at| {
            dst.copy_from_slice(&data[at..at + dst.len()])
        });
        Ok(())
    }
    fn read(&mut self, pdid: Pdid, addr: u64, out: &mut [u8]) -> Result<(), MemError> {
        if addr.checked_add(out.len() as u64).is_none() {
            return Err(MemError::Unmapped { addr });
        }
        self.each(pdid, addr, out.len(), |src, at| {
            out[at..at + src.len()].copy_from_slice(src)
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn crosses_pages() {
        let mut m = HostMemory::new();
        let data: Vec<u8> = (0..=255).cycle().take(10_000).collect();
        m.write(1, 4000, &data).unwrap();
        let mut out = vec![0u8; 10_000];
        m.read(1, 4000, &mut out).unwrap();
        assert_eq!(out, data);
        let mut z = [9u8; 4];
        m.read(2, 4000, &mut z).unwrap();
        assert_eq!(z, [0; 4]);
    }
}
