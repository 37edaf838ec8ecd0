//! The simulated host memory of one node, seen by the NI through the IOMMU model.
//!
//! Each address space (PDID) has mapped ranges (VMAs); every page in them is present or not,
//! and holds real bytes (allocated on first write) so that invariants can compare what arrived
//! with what was sent. The NI's accesses go through [`NiView`], which implements
//! [`Memory`]: it translates every page through the IOMMU, accumulates the translation latency,
//! counts IOMMU fault interrupts, and never writes a byte unless every page of the access is
//! present. The host CPU uses [`SimMemory::host_write`] / [`SimMemory::host_read`] (no IOMMU).

use unpinned_core::iommu::{Iommu, TranslationResult};
use unpinned_core::memory::{page_of, AccessOrigin, MemError, Memory, Pdid, PAGE_BYTES};
use unpinned_core::os::Residency;
use unpinned_core::rng::{Rng, SimRng};
use unpinned_core::time::Duration;

/// Initial residency of a mapped range.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Residence {
    /// Every page present.
    Present,
    /// No page present (fresh anonymous memory, or swapped out).
    Absent,
    /// Each page independently missing with this probability.
    MissingWithProbability(f64),
}

use crate::backing::Backing;
use crate::pages::{zeroed_page, Page, PageTable};

/// A layer in front of the NI's accesses on behalf of a peer (remote puts, packets served to
/// remote gets): the Active Access IOMMU extension of the VOPR's AA swarm. It reaches memory
/// through `mem`, the NI's own view (IOMMU, residency, protection checks).
pub trait PacketHook: Send {
    /// A remote put's packet (see [`Memory::write_from`]).
    fn write_from(
        &mut self,
        mem: &mut dyn Memory,
        pdid: Pdid,
        addr: u64,
        data: &[u8],
        origin: &AccessOrigin,
    ) -> Result<(), MemError>;
    /// A packet served to a remote get (see [`Memory::read_for`]).
    fn read_for(
        &mut self,
        mem: &mut dyn Memory,
        pdid: Pdid,
        addr: u64,
        out: &mut [u8],
        origin: &AccessOrigin,
    ) -> Result<(), MemError>;
}

/// One node's memory.
pub struct SimMemory {
    vmas: Vec<(Pdid, u64, u64)>,
    pages: PageTable,
    /// Ranges the NI may write (exposures and buffers of pending reads): `(pdid, start, end)`.
    /// A write outside them is an invariant violation.
    writable: Vec<(Pdid, u64, u64)>,
    violations: Vec<String>,
    pending_interrupts: u32,
    latency: Duration,
    /// Where written bytes are kept: everywhere (`None`, the default) or only in these ranges
    /// `(pdid, start, end)` (residency and costs only elsewhere, for cluster-scale runs whose
    /// contents nobody checks).
    keep_bytes: Option<Vec<(Pdid, u64, u64)>>,
    /// The last NI read found only a page without bytes: it produced zeros.
    zero_read: bool,
    /// `(address, length)` of bytes the driver vouches are zeros (the payload of a packet
    /// whose sender read it from a page without bytes; length 0: none): written into a page
    /// without bytes, they need no zero check.
    zero_vouched: (usize, usize),
    /// Ranges backed by files / swap or huge pages ([`SimMemory::set_source`]).
    backing: Backing,
    /// A layer in front of remote puts and gets, if any.
    hook: Option<Box<dyn PacketHook>>,
}

impl Default for SimMemory {
    fn default() -> Self {
        Self::new()
    }
}

impl SimMemory {
    /// Empty memory: nothing mapped.
    pub fn new() -> SimMemory {
        SimMemory {
            vmas: Vec::new(),
            pages: PageTable::default(),
            writable: Vec::new(),
            violations: Vec::new(),
            pending_interrupts: 0,
            latency: Duration::ZERO,
            keep_bytes: None,
            zero_read: false,
            zero_vouched: (0, 0),
            backing: Backing::default(),
            hook: None,
        }
    }

    /// Map `[base, base+len)` (page-rounded) in `pdid` with the given residency.
    pub fn map(&mut self, pdid: Pdid, base: u64, len: u64, residence: Residence, rng: &mut SimRng) {
        let start = page_of(base);
        let end = page_of(base + len + PAGE_BYTES - 1);
        self.vmas.push((pdid, start, end));
        self.pages
            .reserve(pdid, start / PAGE_BYTES, end / PAGE_BYTES);
        let mut p = start;
        while p < end {
            let present = match residence {
                Residence::Present => true,
                Residence::Absent => false,
                Residence::MissingWithProbability(f) => rng.gen::<f64>() >= f,
            };
            self.pages.entry(pdid, p).present = present;
            p += PAGE_BYTES;
        }
    }

    /// Back `[base, base + len)` of `pdid` by `source`: its missing pages fault majorly
    /// (a file or swap) or come in as 2 MiB huge pages (`base`, `len` 2 MiB-aligned), and the
    /// IOMMU translates huge ranges with 2 MiB entries. Residency is unchanged.
    pub fn set_source(
        &mut self,
        pdid: Pdid,
        base: u64,
        len: u64,
        source: unpinned_core::os::PageSource,
    ) {
        self.backing.set(pdid, base, len, source);
    }

    /// Unmap a range: its pages are gone (their bytes too).
    pub fn unmap(&mut self, pdid: Pdid, base: u64, len: u64, iommu: &mut Iommu) {
        let (start, end) = (page_of(base), page_of(base + len + PAGE_BYTES - 1));
        self.vmas
            .retain(|&(d, s, e)| !(d == pdid && s >= start && e <= end));
        let mut p = start;
        while p < end {
            self.pages.remove(pdid, p);
            self.backing.invalidate(iommu, pdid, p);
            p += PAGE_BYTES;
        }
    }

    fn mapped(&self, pdid: Pdid, addr: u64) -> bool {
        self.vmas
            .iter()
            .any(|&(d, s, e)| d == pdid && addr >= s && addr < e)
    }

    /// Make a page present (the page-in of `get_user_pages`).
    pub fn make_present(&mut self, pdid: Pdid, page_addr: u64) {
        if self.mapped(pdid, page_addr) {
            self.pages.entry(pdid, page_of(page_addr)).present = true;
        }
    }

    /// Evict a page (reclaim): not present any more, the IOMMU's entry invalidated. Its bytes
    /// are kept (as if swapped out).
    pub fn evict(&mut self, pdid: Pdid, page_addr: u64, iommu: &mut Iommu) {
        if let Some(p) = self.pages.get_mut(pdid, page_of(page_addr)) {
            p.present = false;
        }
        self.backing.invalidate(iommu, pdid, page_of(page_addr));
    }

    /// Whether a page is present.
    pub fn is_present(&self, pdid: Pdid, page_addr: u64) -> bool {
        self.pages
            .get(pdid, page_of(page_addr))
            .is_some_and(|p| p.present)
    }

    /// Pages of `[base, base+len)` not present.
    pub fn missing_pages(&self, pdid: Pdid, base: u64, len: u64) -> u64 {
        let (start, end) = (page_of(base), page_of(base + len + PAGE_BYTES - 1));
        (start..end)
            .step_by(PAGE_BYTES as usize)
            .filter(|&p| !self.is_present(pdid, p))
            .count() as u64
    }

    /// Keep written bytes only in `ranges` (`(pdid, start, end)`); elsewhere only residency
    /// and costs are modelled and reads return zeros. `None` keeps everything (the default).
    pub fn keep_bytes_only(&mut self, ranges: Option<Vec<(Pdid, u64, u64)>>) {
        self.keep_bytes = ranges;
    }

    fn keeps(&self, pdid: Pdid, addr: u64) -> bool {
        match &self.keep_bytes {
            None => true,
            Some(v) => v
                .iter()
                .any(|&(d, s, e)| d == pdid && addr >= s && addr < e),
        }
    }

    /// Host CPU write (no IOMMU, residency unchanged: sets up contents).
    pub fn host_write(&mut self, pdid: Pdid, addr: u64, data: &[u8]) {
        if !self.keeps(pdid, addr) {
            return;
        }
        let mut done = 0;
        while done < data.len() {
            let a = addr + done as u64;
            let (page, off) = (page_of(a), (a - page_of(a)) as usize);
            let n = (PAGE_BYTES as usize - off).min(data.len() - done);
            let p = self.pages.entry(pdid, page);
            let buf = p.data.get_or_insert_with(zeroed_page);
            buf[off..off + n].copy_from_slice(&data[done..done + n]);
            done += n;
        }
    }

    /// Host CPU read (no IOMMU). Pages never written read as zeros.
    pub fn host_read(&self, pdid: Pdid, addr: u64, out: &mut [u8]) {
        let mut done = 0;
        while done < out.len() {
            let a = addr + done as u64;
            let (page, off) = (page_of(a), (a - page_of(a)) as usize);
            let n = (PAGE_BYTES as usize - off).min(out.len() - done);
            match self.pages.get(pdid, page).and_then(|p| p.data.as_ref()) {
                Some(buf) => out[done..done + n].copy_from_slice(&buf[off..off + n]),
                None => out[done..done + n].fill(0),
            }
            done += n;
        }
    }

    /// Allow NI writes to `[start, end)` of `pdid` (an exposure or a pending read's buffer).
    pub fn allow_writes(&mut self, pdid: Pdid, start: u64, end: u64) {
        self.writable.push((pdid, start, end));
    }

    /// Withdraw a range given to [`SimMemory::allow_writes`].
    pub fn disallow_writes(&mut self, pdid: Pdid, start: u64, end: u64) {
        if let Some(i) = self.writable.iter().position(|&w| w == (pdid, start, end)) {
            self.writable.swap_remove(i);
        }
    }

    /// Whether a violation is waiting (cheap: the event loop asks after every event).
    #[inline]
    pub fn has_violations(&self) -> bool {
        !self.violations.is_empty()
    }

    /// Violations seen (writes outside the allowed ranges), drained.
    pub fn take_violations(&mut self) -> Vec<String> {
        std::mem::take(&mut self.violations)
    }

    /// Whether the last NI read produced zeros from a page without bytes (reset by the call).
    /// The simulator carries this with the packet whose payload that read filled.
    #[inline]
    pub fn take_zero_read(&mut self) -> bool {
        std::mem::take(&mut self.zero_read)
    }

    /// Vouch that `bytes` are all zeros until [`SimMemory::clear_zero_vouch`]: an NI write of
    /// (part of) exactly these bytes into a page without bytes skips its zero check. Only the
    /// identity of the slice is kept (its address and length), never a reference to it.
    #[inline]
    pub fn vouch_zero(&mut self, bytes: &[u8]) {
        debug_assert!(is_zero(bytes), "vouched bytes are zeros");
        self.zero_vouched = (bytes.as_ptr() as usize, bytes.len());
    }

    /// Withdraw [`SimMemory::vouch_zero`].
    #[inline]
    pub fn clear_zero_vouch(&mut self) {
        self.zero_vouched = (0, 0);
    }

    /// Whether `data` lies within the bytes vouched for by [`SimMemory::vouch_zero`].
    #[inline]
    fn vouched_zero(&self, data: &[u8]) -> bool {
        let (start, len) = self.zero_vouched;
        let at = data.as_ptr() as usize;
        len != 0 && at >= start && at + data.len() <= start + len
    }

    /// Whether IOMMU fault interrupts are waiting for [`SimMemory::take_interrupts`].
    #[inline]
    pub fn has_interrupts(&self) -> bool {
        self.pending_interrupts != 0
    }

    /// IOMMU fault interrupts raised since the last call.
    pub fn take_interrupts(&mut self) -> u32 {
        std::mem::take(&mut self.pending_interrupts)
    }

    /// Translation latency accumulated since the last call.
    pub fn take_latency(&mut self) -> Duration {
        std::mem::take(&mut self.latency)
    }

    /// Put `hook` in front of the NI's accesses on behalf of peers.
    pub fn set_packet_hook(&mut self, hook: Box<dyn PacketHook>) {
        self.hook = Some(hook);
    }

    /// The NI's view through `iommu`.
    pub fn ni_view<'a>(&'a mut self, iommu: &'a mut Iommu) -> NiView<'a> {
        NiView { mem: self, iommu }
    }

    /// Check every page of an access through the IOMMU; the first failure wins.
    fn translate_range(
        &mut self,
        iommu: &mut Iommu,
        pdid: Pdid,
        addr: u64,
        len: usize,
    ) -> Result<(), MemError> {
        let end = addr + len.max(1) as u64;
        let mut page = page_of(addr);
        while page < end {
            let Some(p) = self.pages.get(pdid, page) else {
                return Err(MemError::Unmapped {
                    addr: page.max(addr),
                });
            };
            let t = self.backing.translate(iommu, pdid, page, p.present);
            self.latency += t.latency;
            if t.result == TranslationResult::Fault {
                self.pending_interrupts += 1;
                return Err(MemError::NotPresent { page_addr: page });
            }
            page += PAGE_BYTES;
        }
        Ok(())
    }
}

/// Whether every byte is zero. An OR-fold (which the compiler vectorizes) over the whole of a
/// packet-sized slice, over 1 KiB chunks of a larger one (stopping at the first that is not).
#[inline]
fn is_zero(data: &[u8]) -> bool {
    let or = |c: &[u8]| c.iter().fold(0u8, |acc, &b| acc | b);
    if data.len() <= 1024 {
        return or(data) == 0;
    }
    data.chunks(1024).all(|c| or(c) == 0)
}

impl Residency for SimMemory {
    fn is_present(&self, pdid: Pdid, page_addr: u64) -> bool {
        SimMemory::is_present(self, pdid, page_addr)
    }
    fn source(&self, pdid: Pdid, page_addr: u64) -> unpinned_core::os::PageSource {
        self.backing.source(pdid, page_addr)
    }
}

/// The NI's access path: memory through the IOMMU.
pub struct NiView<'a> {
    mem: &'a mut SimMemory,
    iommu: &'a mut Iommu,
}

impl NiView<'_> {
    /// [`SimMemory::vouch_zero`] through the view (while the view borrows the memory).
    #[inline]
    pub fn vouch_zero(&mut self, bytes: &[u8]) {
        self.mem.vouch_zero(bytes);
    }

    /// The single page holding `[addr, addr+len)` when the access does not cross a page
    /// boundary (the common case: packets are page-aligned slices), translated; `Ok(None)` when
    /// it crosses one. Inlined into `read` and `write`: every packet goes through it, and its
    /// result would otherwise come back through memory.
    #[inline(always)]
    fn one_page(
        &mut self,
        pdid: Pdid,
        addr: u64,
        len: usize,
    ) -> Result<Option<&mut Page>, MemError> {
        let page = page_of(addr);
        if page != page_of(addr + len.max(1) as u64 - 1) {
            return Ok(None);
        }
        let Some(p) = self.mem.pages.get_mut(pdid, page) else {
            return Err(MemError::Unmapped { addr });
        };
        let t = self
            .mem
            .backing
            .translate(self.iommu, pdid, page, p.present);
        self.mem.latency += t.latency;
        if t.result == TranslationResult::Fault {
            self.mem.pending_interrupts += 1;
            return Err(MemError::NotPresent { page_addr: page });
        }
        Ok(Some(p))
    }
}

impl Memory for NiView<'_> {
    #[inline]
    fn write_from(
        &mut self,
        pdid: Pdid,
        addr: u64,
        data: &[u8],
        origin: &AccessOrigin,
    ) -> Result<(), MemError> {
        // The common case (no hook) touches nothing else.
        if self.mem.hook.is_none() {
            return self.write(pdid, addr, data);
        }
        match self.mem.hook.take() {
            None => self.write(pdid, addr, data),
            Some(mut h) => {
                let r = h.write_from(self, pdid, addr, data, origin);
                self.mem.hook = Some(h);
                r
            }
        }
    }

    #[inline]
    fn read_for(
        &mut self,
        pdid: Pdid,
        addr: u64,
        out: &mut [u8],
        origin: &AccessOrigin,
    ) -> Result<(), MemError> {
        // The common case (no hook) touches nothing else.
        if self.mem.hook.is_none() {
            return self.read(pdid, addr, out);
        }
        match self.mem.hook.take() {
            None => self.read(pdid, addr, out),
            Some(mut h) => {
                let r = h.read_for(self, pdid, addr, out, origin);
                self.mem.hook = Some(h);
                r
            }
        }
    }

    #[inline]
    fn write(&mut self, pdid: Pdid, addr: u64, data: &[u8]) -> Result<(), MemError> {
        let keep = self.mem.keeps(pdid, addr);
        let end = addr + data.len() as u64;
        if !self
            .mem
            .writable
            .iter()
            .any(|&(d, s, e)| d == pdid && addr >= s && end <= e)
        {
            self.mem.violations.push(format!(
                "NI wrote [{addr:#x}, {end:#x}) of pdid {pdid}, outside every exposed range"
            ));
        }
        let off = (addr - page_of(addr)) as usize;
        let vouched = self.mem.vouched_zero(data);
        if let Some(p) = self.one_page(pdid, addr, data.len())? {
            if !keep {
                return Ok(());
            }
            let buf = match &mut p.data {
                Some(buf) => buf,
                // A page without bytes reads as zeros: zeros written into it change nothing,
                // and need no 4 KiB of zeroed memory (a destination written with zeros only
                // never gets any, as an untouched page shares the kernel's zero page).
                None if vouched || is_zero(data) => return Ok(()),
                None => p.data.insert(zeroed_page()),
            };
            buf[off..off + data.len()].copy_from_slice(data);
            return Ok(());
        }
        self.mem
            .translate_range(self.iommu, pdid, addr, data.len())?;
        self.mem.host_write(pdid, addr, data);
        Ok(())
    }

    #[inline]
    fn read(&mut self, pdid: Pdid, addr: u64, out: &mut [u8]) -> Result<(), MemError> {
        let off = (addr - page_of(addr)) as usize;
        self.mem.zero_read = false;
        if let Some(p) = self.one_page(pdid, addr, out.len())? {
            match &p.data {
                Some(buf) => out.copy_from_slice(&buf[off..off + out.len()]),
                None => {
                    out.fill(0);
                    self.mem.zero_read = true;
                }
            }
            return Ok(());
        }
        self.mem
            .translate_range(self.iommu, pdid, addr, out.len())?;
        self.mem.host_read(pdid, addr, out);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use unpinned_core::profile::Profile;

    /// Zeros written by the NI into a page without bytes allocate nothing and read back as
    /// zeros; other bytes are kept, and zeros written over them overwrite them.
    #[test]
    fn zero_writes_need_no_page_bytes() {
        let mut rng = SimRng::seed_from_u64(1);
        let mut iommu = Iommu::new(&Profile::forth_arm().iommu, 1);
        let mut m = SimMemory::new();
        m.map(1, 0x10000, 0x4000, Residence::Present, &mut rng);
        m.allow_writes(1, 0x10000, 0x14000);
        let mut v = m.ni_view(&mut iommu);
        v.write(1, 0x10100, &[0u8; 256]).unwrap();
        v.write(1, 0x11000, &[0u8; 13]).unwrap();
        assert!(m.pages.get(1, 0x10000).is_some_and(|p| p.data.is_none()));
        assert!(m.pages.get(1, 0x11000).is_some_and(|p| p.data.is_none()));
        let mut v = m.ni_view(&mut iommu);
        let mut out = [7u8; 256];
        v.read(1, 0x10100, &mut out).unwrap();
        assert_eq!(out, [0u8; 256]);
        let mut data = [0u8; 256];
        data[255] = 9;
        v.write(1, 0x10100, &data).unwrap();
        v.read(1, 0x10100, &mut out).unwrap();
        assert_eq!(out, data);
        v.write(1, 0x10100, &[0u8; 256]).unwrap();
        v.read(1, 0x10100, &mut out).unwrap();
        assert_eq!(out, [0u8; 256], "zeros over kept bytes overwrite them");
        assert!(!m.has_violations());
        for len in 0..20 {
            let mut d = vec![0u8; len];
            assert!(is_zero(&d));
            if len > 0 {
                d[len - 1] = 1;
                assert!(!is_zero(&d), "{len}");
                d[len - 1] = 0;
                d[0] = 1;
                assert!(!is_zero(&d), "{len}");
            }
        }
    }
}
