//! The host CPU's view of a node's memory for the message layer, with its costs: touching a
//! page that is not present costs a minor fault (and brings it in), copies cost time at the
//! memory-copy bandwidth.

use unpinned_core::memory::{page_of, Pdid, PAGE_BYTES};
use unpinned_core::profile::CpuProfile;
use unpinned_core::time::Duration;
use unpinned_msg::HostMem;

use crate::memory::SimMemory;

/// Host access to one node's address space, accumulating the CPU time it costs.
pub struct Host<'a> {
    /// The node's memory.
    pub mem: &'a mut SimMemory,
    /// The address space.
    pub pdid: Pdid,
    /// CPU costs.
    pub cpu: &'a CpuProfile,
    /// Memory-copy bandwidth, GB/s.
    pub copy_gbps: f64,
    /// CPU time spent so far.
    pub spent: Duration,
    /// Minor faults taken so far.
    pub minor_faults: u64,
    /// Copy real bytes (off at scale: only residency and time are modelled then).
    pub copy_bytes: bool,
}

impl Host<'_> {
    /// The CPU touches `[addr, addr+len)`: absent pages fault in.
    pub fn touch(&mut self, addr: u64, len: u64) {
        if len == 0 {
            return;
        }
        let mut p = page_of(addr);
        while p < addr + len {
            if !self.mem.is_present(self.pdid, p) {
                self.mem.make_present(self.pdid, p);
                self.minor_faults += 1;
                self.spent += Duration::from_us_f64(self.cpu.minor_fault_us);
            }
            p += PAGE_BYTES;
        }
    }
}

impl HostMem for Host<'_> {
    fn read(&mut self, addr: u64, out: &mut [u8]) {
        self.mem.host_read(self.pdid, addr, out);
    }

    fn write(&mut self, addr: u64, data: &[u8]) {
        self.touch(addr, data.len() as u64);
        self.mem.host_write(self.pdid, addr, data);
    }

    fn copy(&mut self, src: u64, dst: u64, len: u64) {
        self.touch(src, len);
        self.touch(dst, len);
        self.spent += Duration((len as f64 / self.copy_gbps).round() as u64);
        if self.copy_bytes {
            let mut buf = vec![0u8; len as usize];
            self.mem.host_read(self.pdid, src, &mut buf);
            self.mem.host_write(self.pdid, dst, &buf);
        }
    }
}
