//! Small broadcasts as one message per member: the root writes `[header | data | trailer]`
//! into a slot that the member owns for this root, and the member copies the data out.
//!
//! Why: the push broadcast of [`super::broadcast`] orders its data before its signal with a
//! quiet, so through PART a member waits for the data's one-way, its acknowledgement's
//! one-way back and the signal's one-way. A write that the engine sends as a single packet is
//! written at the target in one engine turn, under the engine's lock
//! ([`unpinned_live::Runtime::single_packet_bytes`]), and a slot that lies in one page is
//! written whole or not at all (a missing page is a page-fault NACK before any byte): data
//! and signal travel together, one one-way (docs/performance.md, "Small broadcasts as one
//! message", has the measurements).
//!
//! Used only when not every heap of the job is mapped (with the load/store path the push is a
//! `memcpy` and a store), for jobs of up to [`MAX_PES`] PEs and data of up to
//! [`Stage::max_len`] bytes. The decision is the job's, agreed at `shmem_init`, so root and
//! members always agree on it.
//!
//! Layout (the stage area, [`crate::state::STAGE_OFF`] in every PE's internal area):
//!
//! | offset                          | what                                                  |
//! |---------------------------------|-------------------------------------------------------|
//! | 0, [`SLOT_BYTES`]               | the root's two source buffers (a message, assembled)   |
//! | [`CREDITS_OFF`]                 | credits: per member and slot, slot uses it finished    |
//! | [`ACKS_OFF`]                    | the member's credit sources: per root and slot         |
//! | [`SLOTS_OFF`] + (r·K + s)·slot  | slot s of root r (K = [`SLOTS_PER_ROOT`])               |
//!
//! A message: header words `[group id, group sequence, start | size << 32, stride, length]`, the
//! data padded to 8 bytes, then a trailer word ([`trailer`]). A member that finds its broadcast
//! with another length than its own ends the job with a message naming both (the program passed
//! different sizes), instead of waiting for a trailer that is elsewhere. The group id is the
//! symmetric identity of the group's words (a team's, or an active set's `pSync`) and the geometry
//! words tell apart active sets that reuse one `pSync`; every member counts the broadcasts of each
//! group, so (id, geometry, sequence) names one broadcast in the whole job. A member looks for its
//! broadcast in each slot of the root's and in its stash.
//!
//! Credits: the root writes its n-th message to a member into slot `n % K` and first waits
//! until the member finished `n / K` uses of that slot; a member that copied a message out
//! counts the slot's use, and at the start of a later broadcast from that root, once
//! [`CREDIT_BATCH`] uses await telling, writes the counts into the root's credit words (a
//! posted write, or a store when the root's heap is mapped here; see [`Stage::send_credits`]
//! for why then). A root therefore runs at most [`SLOTS_PER_ROOT`] - [`CREDIT_BATCH`]
//! broadcasts ahead of a member that is not in the library.
//!
//! The stash: a PE that waits in the library (for its broadcast, for a credit, in a barrier:
//! every `sync::wait_while`) empties the slots holding messages it has not asked for yet
//! into a private stash and gives those slots back at once ([`Stage::drain`]). So broadcasts
//! of different teams may be taken in any order, and PEs that root broadcasts to each other
//! in different orders never wait for each other's slots: a root waits for a slot only while
//! the member is outside the library.
//!
//! When the member has found its header it takes the engine's lock once: the turn writing
//! that packet has ended, so the whole message is in place (the trailer is checked again).
//! Through a mapping the root stores the data and the trailer first and the header words
//! last, with release ordering.

use std::collections::HashMap;
use std::ffi::c_int;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::ctx::{wait_one, Ctx, Pending};
use crate::state::{fatal, State};
use crate::sync::wait_while;
use crate::xlate::Target;

use super::Group;

/// Slots each member keeps per root.
pub const SLOTS_PER_ROOT: usize = 4;
/// A member tells a root about the slots it emptied once this many await telling (see
/// [`Stage::send_credits`]): every credit is a packet each way on a broadcast's path.
const CREDIT_BATCH: u32 = 2;
/// Bytes of a slot: within one page, so that a message is written whole or not at all.
pub const SLOT_BYTES: usize = 2048;
const _: () = assert!(4096 % SLOT_BYTES == 0 && CREDIT_BATCH as usize <= SLOTS_PER_ROOT / 2);
/// Source buffers of the root, used in turn: a send waits for the writes of the one before the
/// last (long complete), not for the last one's acknowledgements, which may still be on their
/// way when the next broadcast starts. It waits after posting its own writes, off the path of
/// its message.
const SOURCES: usize = 2;
/// Jobs larger than this do not stage (the area grows with the PEs).
pub const MAX_PES: u32 = 64;
/// Header bytes of a message.
const HEADER_BYTES: usize = 40;
/// Trailer bytes of a message.
const TRAILER_BYTES: usize = 8;
/// Offset of the credit words in the stage area.
pub const CREDITS_OFF: usize = SOURCES * SLOT_BYTES;
/// Offset of the members' credit sources.
pub const ACKS_OFF: usize = CREDITS_OFF + MAX_PES as usize * SLOTS_PER_ROOT * 8;
/// Offset of the slots.
pub const SLOTS_OFF: usize =
    (ACKS_OFF + MAX_PES as usize * SLOTS_PER_ROOT * 8).next_multiple_of(4096);
/// Bytes of the stage area.
pub const STAGE_BYTES: usize = SLOTS_OFF + MAX_PES as usize * SLOTS_PER_ROOT * SLOT_BYTES;
const _: () = assert!(ACKS_OFF + MAX_PES as usize * SLOTS_PER_ROOT * 8 <= SLOTS_OFF);

/// A stashed broadcast's root and header words.
type StashKey = (u32, [u64; 4]);

/// A member's count of the slot uses it finished.
struct Taken {
    /// Per (root, slot): uses finished, and whether the root has yet to be told. A slot has
    /// at most one untold use: the root writes it again only once told of every earlier one.
    uses: Vec<(u64, bool)>,
    /// Per root: the last credit write (all of this PE's credit words at that root), until
    /// it is known complete. The next write to them waits for it: PART does not order two
    /// writes, and a credit word must never go back (the barrier flags follow the same rule,
    /// crates/shmem/src/sync.rs).
    last: Vec<Option<Pending>>,
}

/// The stage: this PE's area and counters.
pub struct Stage {
    /// Local address of the stage area.
    base: *mut u8,
    /// Largest broadcast staged (0: staging is off for this job).
    max_len: usize,
    /// The root's side: messages sent per member, and sends made; held while a message is
    /// sent, which also guards the source buffers.
    sent: Mutex<(Vec<u64>, usize)>,
    /// The writes from each source buffer not yet known complete.
    source_ctx: [Ctx; SOURCES],
    /// The member's side: per (root, slot), uses finished and whether the root has yet to
    /// be told; per root, the last credit write until it is known complete.
    taken: Mutex<Taken>,
    /// Broadcasts seen per group (id and geometry).
    seen: Mutex<HashMap<[u64; 3], u64>>,
    /// Broadcasts taken out of their slot before this PE asked for them, by root and header
    /// (see [`Stage::drain`]).
    stash: Mutex<HashMap<StashKey, Vec<u8>>>,
    /// Drains that stashed something (a waiting receiver looks into the stash again).
    stashes: AtomicU64,
    /// Messages in the stash.
    stashed: AtomicUsize,
    /// Held while a slot is taken (a receiver's copy, or a drain), so that no two threads
    /// take one message.
    taking: Mutex<()>,
    /// Messages sent (one per member of a staged broadcast this PE was the root of).
    pub sent_total: AtomicU64,
    /// Messages received.
    pub received_total: AtomicU64,
}

// SAFETY: `base` is in the symmetric heap, which lives as long as the process; its words are
// accessed through atomics, its pages under the locks above.
unsafe impl Send for Stage {}
// SAFETY: as above.
unsafe impl Sync for Stage {}

/// The largest staged broadcast when every PE's runtime sends writes of up to
/// `single_packet_bytes` as one packet (the job's smallest), for a job of `npes` PEs that has
/// every heap mapped everywhere or not (`all_mapped`).
pub fn max_len_for(npes: u32, all_mapped: bool, single_packet_bytes: usize) -> usize {
    if all_mapped || !(2..=MAX_PES).contains(&npes) {
        return 0;
    }
    let whole = single_packet_bytes.min(SLOT_BYTES);
    (whole.saturating_sub(HEADER_BYTES + TRAILER_BYTES)) & !7
}

/// A member's broadcast of `mine` bytes found as the root's `sent` bytes: the program passed
/// different sizes (fatal, naming both).
fn check_len(call: &str, root_pe: c_int, sent: usize, mine: usize) {
    if sent != mine {
        fatal(
            call,
            format!("the root, PE {root_pe}, broadcasts {sent} bytes and this PE expects {mine}: every PE must pass the same number of elements"),
        );
    }
}

/// The trailer word of a message: tells a complete message from a header over old data.
fn trailer(id: u64, seq: u64) -> u64 {
    id.rotate_left(17) ^ seq.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5f0f_a11e_d5ee_d5a1
}

impl Stage {
    /// The stage over `base` (the stage area of this PE's internal area, [`STAGE_BYTES`]),
    /// staging broadcasts of up to `max_len` bytes (see [`max_len_for`]).
    pub fn new(base: *mut u8, npes: u32, max_len: usize) -> Stage {
        let n = npes.min(MAX_PES) as usize * SLOTS_PER_ROOT;
        Stage {
            base,
            max_len,
            sent: Mutex::new((vec![0; n / SLOTS_PER_ROOT], 0)),
            source_ctx: [Ctx::new(0), Ctx::new(0)],
            taken: Mutex::new(Taken {
                uses: vec![(0, false); n],
                last: (0..n / SLOTS_PER_ROOT).map(|_| None).collect(),
            }),
            seen: Mutex::new(HashMap::new()),
            stash: Mutex::new(HashMap::new()),
            stashes: AtomicU64::new(0),
            stashed: AtomicUsize::new(0),
            taking: Mutex::new(()),
            sent_total: AtomicU64::new(0),
            received_total: AtomicU64::new(0),
        }
    }

    /// Whether a broadcast of `len` bytes goes through the stage.
    pub fn stages(&self, len: usize) -> bool {
        self.max_len > 0 && len <= self.max_len
    }

    /// Largest broadcast staged (0: staging is off).
    pub fn max_len(&self) -> usize {
        self.max_len
    }

    fn word(&self, off: usize) -> &AtomicU64 {
        // SAFETY: inside the stage area (callers' offsets), 8-aligned, lives forever.
        unsafe { &*(self.base.add(off) as *const AtomicU64) }
    }

    fn credit_off(member: u32, slot: usize) -> usize {
        CREDITS_OFF + (member as usize * SLOTS_PER_ROOT + slot) * 8
    }

    fn ack_off(root: u32, slot: usize) -> usize {
        ACKS_OFF + (root as usize * SLOTS_PER_ROOT + slot) * 8
    }

    fn slot_off(root: u32, slot: usize) -> usize {
        SLOTS_OFF + (root as usize * SLOTS_PER_ROOT + slot) * SLOT_BYTES
    }

    /// The header of group `g`'s next broadcast (every member calls this once per broadcast
    /// of the group, in the same order).
    fn next_header(&self, st: &State, call: &str, g: &Group) -> [u64; 4] {
        let id = st
            .symmetric_id(g.words as *const u8)
            .unwrap_or_else(|| fatal(call, "the group's synchronization words are not symmetric"));
        let geometry = [
            g.start as u32 as u64 | (g.size as u64) << 32,
            g.stride as u64,
        ];
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        let n = seen.entry([id, geometry[0], geometry[1]]).or_insert(0);
        *n += 1;
        [id, *n, geometry[0], geometry[1]]
    }

    /// The root's part: send `len` bytes of `source` to every other member of `g`.
    ///
    /// # Safety
    /// `source` readable for `len` bytes (at most [`Stage::max_len`]).
    pub unsafe fn send(&self, st: &State, call: &str, g: &Group, source: *const u8, len: usize) {
        let [id, seq, start_size, stride] = self.next_header(st, call, g);
        let header = [id, seq, start_size, stride, len as u64];
        let padded = len.next_multiple_of(8);
        let total = HEADER_BYTES + padded + TRAILER_BYTES;
        let mut guard = self.sent.lock().unwrap_or_else(|e| e.into_inner());
        let (sent, sends) = &mut *guard;
        let which = *sends % SOURCES;
        *sends += 1;
        // The buffer is reused: its last message's writes completed at the end of the send
        // before this one (below).
        let ctx = &self.source_ctx[which];
        // SAFETY: inside the stage area.
        let page = unsafe { self.base.add(which * SLOT_BYTES) };
        // SAFETY: the source buffer lies in the stage area, ours under `sent`'s lock; the
        // caller's `source` is readable for `len` bytes.
        unsafe {
            for (i, w) in header.iter().enumerate() {
                (page as *mut u64).add(i).write(*w);
            }
            if len > 0 {
                std::ptr::copy_nonoverlapping(source, page.add(HEADER_BYTES), len);
            }
            std::ptr::write_bytes(page.add(HEADER_BYTES + len), 0, padded - len);
            (page.add(HEADER_BYTES + padded) as *mut u64).write(trailer(header[0], header[1]));
        }
        for i in (0..g.size).filter(|&i| i != g.me) {
            let pe = g.pe(i);
            let m = pe as u32;
            let n = sent[m as usize];
            sent[m as usize] += 1;
            self.sent_total.fetch_add(1, Ordering::Relaxed);
            let slot = n as usize % SLOTS_PER_ROOT;
            let uses = n / SLOTS_PER_ROOT as u64;
            let credit = self.word(Self::credit_off(m, slot));
            wait_while(st, || credit.load(Ordering::Acquire) >= uses);
            let dst = (self.base as usize + Self::slot_off(st.me, slot)) as *mut u8;
            match st.target(call, pe, dst, total) {
                Target::Local(_) => unreachable!("a member is another PE"),
                // SAFETY: the member's slot, free (credit above), in one page; the header words
                // go last, with release ordering, so that a member that sees any of them new
                // sees the data and the trailer.
                Target::Mapped(p) => unsafe {
                    std::ptr::copy_nonoverlapping(
                        page.add(HEADER_BYTES),
                        p.add(HEADER_BYTES),
                        padded + TRAILER_BYTES,
                    );
                    for (k, w) in header.iter().enumerate().rev() {
                        (*(p as *const AtomicU64).add(k)).store(*w, Ordering::Release);
                    }
                },
                Target::Remote { addr, key } => {
                    // SAFETY: the source buffer stays as it is until its context's quiet (at
                    // the end of the next send, under the lock held here).
                    let id =
                        unsafe { st.rt.write(m, page, addr, key, total) }.unwrap_or_else(|e| {
                            fatal(call, format!("the broadcast to PE {pe} was refused: {e}"))
                        });
                    ctx.push(
                        Pending {
                            id,
                            pe: m,
                            buf: None,
                        },
                        true,
                    );
                }
            }
        }
        // The next send reuses the other buffer: its writes (the send before this one's) must
        // be complete by then. Waited for here, after this message left.
        self.source_ctx[(which + 1) % SOURCES].quiet();
    }

    /// Wait until `deadline` for the stage's writes still outstanding, ignoring failures
    /// (`shmem_finalize`: see [`Ctx::quiet_lenient`]).
    pub fn quiet_lenient(&self, deadline: std::time::Instant) {
        let credits = Ctx::new(0);
        let mut taken = self.taken.lock().unwrap_or_else(|e| e.into_inner());
        for p in taken.last.iter_mut().filter_map(Option::take) {
            credits.push(p, true);
        }
        credits.quiet_lenient(deadline);
        for c in &self.source_ctx {
            c.quiet_lenient(deadline);
        }
    }

    /// A member's part: wait for `len` bytes from member `root` of `g` and copy them to
    /// `dest`.
    ///
    /// # Safety
    /// `dest` writable for `len` bytes (at most [`Stage::max_len`]).
    pub unsafe fn receive(
        &self,
        st: &State,
        call: &str,
        g: &Group,
        root: u32,
        dest: *mut u8,
        len: usize,
    ) {
        let header = self.next_header(st, call, g);
        let root_pe = g.pe(root);
        let r = root_pe as u32;
        // Credits of earlier broadcasts go now, while the message is on its way: the root
        // needs them only to reuse a slot, and a credit posted after the copy was on the
        // critical path of every broadcast.
        self.send_credits(st, call, root_pe, CREDIT_BATCH);
        let ours = |slot: usize| {
            let off = Self::slot_off(r, slot);
            (0..4).all(|k| self.word(off + 8 * k).load(Ordering::Acquire) == header[k])
        };
        loop {
            // Read before the stash is looked into: a drain that stashes ours after the look
            // changes it, and the wait below returns.
            let stashes = self.stashes.load(Ordering::Acquire);
            // The stash is empty but for programs that take broadcasts in another order than
            // they were sent: its lock is taken only when it holds something.
            let stashed = if self.stashed.load(Ordering::Acquire) == 0 {
                None
            } else {
                let mut stash = self.stash.lock().unwrap_or_else(|e| e.into_inner());
                let d = stash.remove(&(r, header));
                self.stashed.store(stash.len(), Ordering::Release);
                d
            };
            if let Some(data) = stashed {
                check_len(call, root_pe, data.len(), len);
                if len > 0 {
                    // SAFETY: `dest` writable for `len` bytes (caller), which is `data.len()`.
                    unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), dest, len) };
                }
                self.received_total.fetch_add(1, Ordering::Relaxed);
                return;
            }
            let mut found = None;
            // Ours, or another of this root's not yet taken (a taken slot's sequence word is
            // 0), or ours stashed meanwhile (by another thread, or by `wait_while`'s drain).
            wait_while(st, || {
                found = (0..SLOTS_PER_ROOT).find(|&s| ours(s));
                found.is_some()
                    || (0..SLOTS_PER_ROOT).any(|s| self.seq_word(r, s) != 0)
                    || self.stashes.load(Ordering::Acquire) != stashes
            });
            // The engine turn that writes a packet holds this lock: once we have had it, the
            // packet whose header we saw is written whole.
            if st.rt.with_engine_locked(|| ()).is_err() {
                fatal(
                    call,
                    format!("the runtime stopped while waiting for PE {root_pe}"),
                );
            }
            let taking = self.taking.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(slot) = found.filter(|&s| ours(s)) {
                if let Some(data_len) = self.complete(r, slot) {
                    check_len(call, root_pe, data_len, len);
                    if len > 0 {
                        let off = Self::slot_off(r, slot);
                        // SAFETY: the slot holds our message (checked), which the root leaves
                        // alone until our credit for it (sent later); `dest` writable for
                        // `len` bytes (caller).
                        unsafe {
                            std::ptr::copy_nonoverlapping(
                                self.base.add(off + HEADER_BYTES),
                                dest,
                                len,
                            )
                        };
                    }
                    self.received_total.fetch_add(1, Ordering::Relaxed);
                    self.taken_from(r, slot);
                    return;
                }
            }
            // Not ours: broadcasts this PE takes later (another team's from the same root).
            drop(taking);
            self.drain(st);
        }
    }

    /// Take every whole message out of this PE's slots into the stash and give the slots
    /// back at once: a root may need a slot of ours for a broadcast this PE waits for before
    /// it can send the one this PE waits for, or a broadcast to us that it must finish before
    /// it can go on to what we wait for in another call. `sync::wait_while` calls this every
    /// few hundred polls, so that no PE waiting in the library holds a root back; without it,
    /// PEs that take broadcasts of different teams in different orders could each wait for
    /// the other's slots.
    pub fn drain(&self, st: &State) {
        if self.max_len == 0 {
            return;
        }
        let npes = st.npes.min(MAX_PES);
        let any = (0..npes)
            .filter(|&r| r != st.me)
            .any(|r| (0..SLOTS_PER_ROOT).any(|s| self.seq_word(r, s) != 0));
        if !any || st.rt.with_engine_locked(|| ()).is_err() {
            return;
        }
        let mut roots = Vec::new();
        {
            let _taking = self.taking.lock().unwrap_or_else(|e| e.into_inner());
            for r in (0..npes).filter(|&r| r != st.me) {
                for slot in (0..SLOTS_PER_ROOT).filter(|&s| self.seq_word(r, s) != 0) {
                    let Some(data_len) = self.complete(r, slot) else {
                        continue;
                    };
                    let off = Self::slot_off(r, slot);
                    let key: [u64; 4] =
                        std::array::from_fn(|k| self.word(off + 8 * k).load(Ordering::Acquire));
                    let mut data = vec![0u8; data_len];
                    // SAFETY: the slot holds a whole message of `data_len` bytes (checked),
                    // which the root leaves alone until our credit for it.
                    unsafe {
                        std::ptr::copy_nonoverlapping(
                            self.base.add(off + HEADER_BYTES),
                            data.as_mut_ptr(),
                            data_len,
                        )
                    };
                    let mut stash = self.stash.lock().unwrap_or_else(|e| e.into_inner());
                    stash.insert((r, key), data);
                    self.stashed.store(stash.len(), Ordering::Release);
                    self.taken_from(r, slot);
                    roots.push(r);
                }
            }
        }
        if !roots.is_empty() {
            self.stashes.fetch_add(1, Ordering::AcqRel);
        }
        roots.dedup();
        for r in roots {
            self.send_credits(st, "shmem_broadcast", r as c_int, 1);
        }
    }

    /// The sequence word of slot `slot` of root `r` (0: empty or taken).
    fn seq_word(&self, r: u32, slot: usize) -> u64 {
        self.word(Self::slot_off(r, slot) + 8)
            .load(Ordering::Acquire)
    }

    /// The data length of the whole message in slot `slot` of root `r`, or `None` while it is
    /// not whole. A length beyond a slot is a protocol error (fatal).
    fn complete(&self, r: u32, slot: usize) -> Option<usize> {
        let off = Self::slot_off(r, slot);
        let (id, seq) = (
            self.word(off).load(Ordering::Acquire),
            self.word(off + 8).load(Ordering::Acquire),
        );
        let len = self.word(off + 32).load(Ordering::Acquire) as usize;
        if len > SLOT_BYTES - HEADER_BYTES - TRAILER_BYTES {
            fatal(
                "shmem_broadcast",
                format!(
                    "a broadcast message from PE {r} claims {len} bytes, more than a slot holds"
                ),
            );
        }
        let at = off + HEADER_BYTES + len.next_multiple_of(8);
        (self.word(at).load(Ordering::Acquire) == trailer(id, seq)).then_some(len)
    }

    /// Slot `slot` of root `r` has been taken: mark it so (sequence word 0, before the credit
    /// that lets the root write it again) and count the use.
    fn taken_from(&self, r: u32, slot: usize) {
        self.word(Self::slot_off(r, slot) + 8)
            .store(0, Ordering::Release);
        let mut taken = self.taken.lock().unwrap_or_else(|e| e.into_inner());
        let t = &mut taken.uses[r as usize * SLOTS_PER_ROOT + slot];
        *t = (t.0 + 1, true);
    }

    /// Tell `root_pe` how many uses of each of its slots this PE has finished (every slot's
    /// count, in one write), once `at_least` uses await telling ([`CREDIT_BATCH`] at the
    /// start of a broadcast; one after a slot was emptied into the stash).
    ///
    /// Sent at the start of a broadcast from that root, while its message is on its way: a
    /// credit posted after the copy put a packet on the critical path of every broadcast.
    /// After this, at most `CREDIT_BATCH - 1` of the messages taken are untold, so a root
    /// whose message n needs the credit of message n - K (K = [`SLOTS_PER_ROOT`]) waits only
    /// until the member has started to take message n - K + `CREDIT_BATCH`, which the root
    /// sent before: a member that takes a root's broadcasts in the order they were sent
    /// always gets there.
    fn send_credits(&self, st: &State, call: &str, root_pe: c_int, at_least: u32) {
        let r = root_pe as u32;
        let mut guard = self.taken.lock().unwrap_or_else(|e| e.into_inner());
        let Taken { uses, last } = &mut *guard;
        let of_root = r as usize * SLOTS_PER_ROOT..(r as usize + 1) * SLOTS_PER_ROOT;
        let untold = uses[of_root.clone()].iter().filter(|t| t.1).count() as u32;
        if untold < at_least.max(1) {
            return;
        }
        // One write carries every credit word of this PE at the root (a write per slot was
        // two posts, the second after waiting for the first's turn, on the path of every
        // second broadcast); its words are written again only once it is complete.
        if let Some(p) = last[r as usize].take() {
            wait_one(p);
        }
        for (slot, t) in uses[of_root].iter_mut().enumerate() {
            t.1 = false;
            self.word(Self::ack_off(r, slot))
                .store(t.0, Ordering::Release);
        }
        last[r as usize] = self.give_credits(st, call, root_pe);
    }

    /// Write this PE's credit sources for `root_pe` (its slot uses finished, per slot) into
    /// `root_pe`'s credit words of this PE; the write, if it went through PART.
    fn give_credits(&self, st: &State, call: &str, root_pe: c_int) -> Option<Pending> {
        let r = root_pe as u32;
        let credits = (self.base as usize + Self::credit_off(st.me, 0)) as *mut u8;
        let bytes = SLOTS_PER_ROOT * 8;
        match st.target(call, root_pe, credits, bytes) {
            Target::Local(_) => unreachable!("the root is another PE"),
            Target::Mapped(p) => {
                for slot in 0..SLOTS_PER_ROOT {
                    let uses = self.word(Self::ack_off(r, slot)).load(Ordering::Relaxed);
                    // SAFETY: the root's credit words of this PE, symmetric and aligned.
                    unsafe { &*(p as *const AtomicU64).add(slot) }.store(uses, Ordering::Release);
                }
                None
            }
            Target::Remote { addr, key } => {
                let source = self.word(Self::ack_off(r, 0)).as_ptr() as *const u8;
                // SAFETY: the source words (this root's, contiguous) live in the stage area for
                // as long as the process, and are stored again only once this write is
                // complete (`Taken::last`).
                let id = unsafe { st.rt.write(r, source, addr, key, bytes) }.unwrap_or_else(|e| {
                    fatal(call, format!("the credit to PE {root_pe} was refused: {e}"))
                });
                Some(Pending {
                    id,
                    pe: r,
                    buf: None,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn staging_is_the_jobs_decision_and_fits_one_packet_and_one_slot() {
        assert_eq!(
            max_len_for(2, true, 16384),
            0,
            "every heap mapped: stores instead"
        );
        assert_eq!(max_len_for(1, false, 16384), 0, "nobody to send to");
        assert_eq!(
            max_len_for(MAX_PES + 1, false, 16384),
            0,
            "no room for the slots"
        );
        assert_eq!(
            max_len_for(2, false, 16384),
            SLOT_BYTES - HEADER_BYTES - TRAILER_BYTES
        );
        assert_eq!(max_len_for(64, false, 256), 208, "one packet of 256 bytes");
        assert_eq!(max_len_for(2, false, 48), 0, "no room for data");
        assert_eq!(max_len_for(2, false, 8), 0);
    }

    #[test]
    fn the_area_fits_and_slots_do_not_cross_pages() {
        assert!(ACKS_OFF >= CREDITS_OFF + MAX_PES as usize * SLOTS_PER_ROOT * 8);
        assert!(SLOTS_OFF.is_multiple_of(4096));
        for root in [0, 1, MAX_PES - 1] {
            for slot in 0..SLOTS_PER_ROOT {
                let off = Stage::slot_off(root, slot);
                assert_eq!(off / 4096, (off + SLOT_BYTES - 1) / 4096);
                assert!(off + SLOT_BYTES <= STAGE_BYTES);
            }
        }
    }

    #[test]
    fn trailers_differ_between_broadcasts() {
        assert_ne!(trailer(1, 1), trailer(1, 2));
        assert_ne!(trailer(1, 1), trailer(2, 1));
        assert_ne!(trailer(0, 0), 0);
    }
}
