//! Teams: the world and shared teams, strided splits, 2-D splits, translation, team contexts.
//!
//! Every team is a strided set of world PEs (start, stride, size): a strided split of a
//! strided team is strided again. Each team holds one of [`MAX_SLOTS`] slots of symmetric
//! scratch (allocated at `shmem_init` in the heap's internal area): the counters of its
//! barrier and one exchange word ([`crate::coll::Group`]). Creating teams agrees on a slot
//! free on every PE of the parent (an AND of the PEs' free masks over the parent team);
//! disjoint teams made by one split share a slot. A PE that destroys a team frees its slot.

#![allow(missing_docs, clippy::missing_safety_doc)]

use std::ffi::{c_int, c_long, c_void};
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use std::sync::OnceLock;

use crate::coll::{self, Group, GROUP_WORDS};
use crate::ctx::Ctx;
use crate::state::{fatal, state, State};

/// Team slots (teams alive at once on a PE, world and shared included).
pub const MAX_SLOTS: usize = 64;
/// Slot of the world team.
const WORLD_SLOT: usize = 0;
/// Slot of the shared team.
const SHARED_SLOT: usize = 1;
/// `SHMEM_TEAM_NUM_CONTEXTS` (include/shmem/team.h).
pub const TEAM_NUM_CONTEXTS: c_long = 1;

/// Local address of slot 0's scratch (the same offset on every PE).
static SLOTS: AtomicPtr<u64> = AtomicPtr::new(std::ptr::null_mut());
/// Slots in use on this PE (bit i: slot i).
static USED: AtomicU64 = AtomicU64::new(1 << WORLD_SLOT | 1 << SHARED_SLOT);
static WORLD: OnceLock<Team> = OnceLock::new();
static SHARED: OnceLock<Team> = OnceLock::new();

/// The object whose address is `SHMEM_TEAM_WORLD` (include/shmem/team.h).
#[no_mangle]
#[allow(non_upper_case_globals)]
pub static shmem_up_team_world: [u64; 1] = [0];
/// The object whose address is `SHMEM_TEAM_SHARED`.
#[no_mangle]
#[allow(non_upper_case_globals)]
pub static shmem_up_team_shared: [u64; 1] = [0];

/// `shmem_team_t` on the C side.
pub type TeamHandle = *mut c_void;

/// `shmem_team_config_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct TeamConfig {
    /// Contexts the program means to create on the team.
    pub num_contexts: c_int,
}

/// A team of which this PE is a member.
pub struct Team {
    /// Its PEs and scratch.
    pub group: Group,
    /// Its slot.
    pub slot: usize,
    /// The configuration it was created with.
    pub config: TeamConfig,
}

/// Reserve the slots' scratch; called once by `shmem_init` on every PE, so the offsets agree.
pub fn init(st: &State) {
    let len = MAX_SLOTS * GROUP_WORDS * 8;
    let p = st
        .scratch_alloc(len, 64)
        .unwrap_or_else(|| fatal("shmem_init", "the internal area cannot hold the team slots"));
    SLOTS.store(p as *mut u64, Ordering::Release);
}

fn slot_ptr(slot: usize) -> *mut u64 {
    let base = SLOTS.load(Ordering::Acquire);
    assert!(!base.is_null(), "team slots used before shmem_init");
    // SAFETY: inside the area reserved by `init`.
    unsafe { base.add(slot * GROUP_WORDS) }
}

fn make(st: &State, start: i64, stride: i64, size: u32, slot: usize, config: TeamConfig) -> Team {
    let me = st.me as i64;
    let idx = if stride == 0 {
        0
    } else {
        ((me - start) / stride) as u32
    };
    Team {
        group: Group::new(start, stride, size, idx, slot_ptr(slot)),
        slot,
        config,
    }
}

fn world(st: &State) -> &'static Team {
    WORLD.get_or_init(|| make(st, 0, 1, st.npes, WORLD_SLOT, TeamConfig::default()))
}

/// The PEs whose heaps this PE reaches with loads and stores (`shmem_ptr` non-null): every
/// PE of a one-host job with the load/store path on, only this PE with it off. A set that is
/// not strided (never with the launchers here) falls back to this PE alone.
fn shared(st: &State) -> &'static Team {
    SHARED.get_or_init(|| {
        let mapped: Vec<i64> = (0..st.npes)
            .filter(|&p| !st.peers[p as usize].heap_map.is_null())
            .map(i64::from)
            .collect();
        let (start, stride, size) = match mapped.as_slice() {
            [a, b, ..] if mapped.windows(2).all(|w| w[1] - w[0] == b - a) => {
                (*a, b - a, mapped.len() as u32)
            }
            _ => (st.me as i64, 1, 1),
        };
        make(st, start, stride, size, SHARED_SLOT, TeamConfig::default())
    })
}

/// `SHMEM_TEAM_WORLD`.
pub fn world_handle() -> TeamHandle {
    shmem_up_team_world.as_ptr() as TeamHandle
}

fn shared_handle() -> TeamHandle {
    shmem_up_team_shared.as_ptr() as TeamHandle
}

/// The team behind a handle (`None`: `SHMEM_TEAM_INVALID`).
pub fn resolve(st: &State, h: TeamHandle) -> Option<&'static Team> {
    if h.is_null() {
        None
    } else if h == world_handle() {
        Some(world(st))
    } else if h == shared_handle() {
        Some(shared(st))
    } else {
        // SAFETY: any other handle is a team from a split, not destroyed (program contract).
        Some(unsafe { &*(h as *const Team) })
    }
}

/// The team for a collective `call`: `SHMEM_TEAM_INVALID` is a fatal error.
pub fn need(st: &State, call: &str, h: TeamHandle) -> &'static Team {
    resolve(st, h).unwrap_or_else(|| {
        fatal(
            call,
            "the team is SHMEM_TEAM_INVALID (this PE is not a member, or the team was not created)",
        )
    })
}

/// Agree on `k` slots free on every PE of `parent` (collective over it); `None` if fewer are
/// free. The slots are not marked used here.
fn agree_slots(st: &State, call: &str, parent: &Group, k: usize) -> Option<Vec<usize>> {
    let free = !USED.load(Ordering::Acquire);
    let words = coll::allgather_word(st, call, parent, free);
    let all = words.iter().fold(u64::MAX, |a, w| a & w);
    let slots: Vec<usize> = (0..MAX_SLOTS)
        .filter(|i| all >> i & 1 == 1)
        .take(k)
        .collect();
    (slots.len() == k).then_some(slots)
}

fn config_of(config: *const TeamConfig, mask: c_long) -> TeamConfig {
    if config.is_null() || mask & TEAM_NUM_CONTEXTS == 0 {
        TeamConfig::default()
    } else {
        // SAFETY: the caller's config.
        unsafe { *config }
    }
}

/// A strided subset (`start`, `stride`, `size` in `parent`'s numbering) as a team in world
/// numbering, if this PE is in it.
fn member(st: &State, parent: &Group, start: i64, stride: i64, size: u32) -> Option<(i64, i64)> {
    let wstart = parent.world(start);
    let wstride = parent.stride * stride;
    let me = st.me as i64;
    let d = me - wstart;
    let inside = if wstride == 0 {
        d == 0
    } else {
        d % wstride == 0 && (0..size as i64).contains(&(d / wstride))
    };
    inside.then_some((wstart, wstride))
}

unsafe fn set_out(out: *mut TeamHandle, h: TeamHandle) {
    if !out.is_null() {
        // SAFETY: the caller's handle.
        unsafe { out.write(h) };
    }
}

fn boxed(t: Team) -> TeamHandle {
    USED.fetch_or(1 << t.slot, Ordering::AcqRel);
    Box::into_raw(Box::new(t)) as TeamHandle
}

#[no_mangle]
pub extern "C" fn shmem_team_my_pe(team: TeamHandle) -> c_int {
    let st = state("shmem_team_my_pe");
    resolve(st, team).map_or(-1, |t| t.group.me as c_int)
}

#[no_mangle]
pub extern "C" fn shmem_team_n_pes(team: TeamHandle) -> c_int {
    let st = state("shmem_team_n_pes");
    resolve(st, team).map_or(-1, |t| t.group.size as c_int)
}

#[no_mangle]
pub unsafe extern "C" fn shmem_team_get_config(
    team: TeamHandle,
    config_mask: c_long,
    config: *mut TeamConfig,
) -> c_int {
    let st = state("shmem_team_get_config");
    let Some(t) = resolve(st, team) else {
        return -1;
    };
    if !config.is_null() && config_mask & TEAM_NUM_CONTEXTS != 0 {
        // SAFETY: the caller's config.
        unsafe { (*config).num_contexts = t.config.num_contexts };
    }
    0
}

#[no_mangle]
pub extern "C" fn shmem_team_translate_pe(
    src_team: TeamHandle,
    src_pe: c_int,
    dest_team: TeamHandle,
) -> c_int {
    let st = state("shmem_team_translate_pe");
    let (Some(s), Some(d)) = (resolve(st, src_team), resolve(st, dest_team)) else {
        return -1;
    };
    if src_pe < 0 || src_pe as u32 >= s.group.size {
        return -1;
    }
    d.group
        .index_of(s.group.world(src_pe as i64))
        .map_or(-1, |i| i as c_int)
}

#[no_mangle]
pub unsafe extern "C" fn shmem_team_split_strided(
    parent: TeamHandle,
    start: c_int,
    stride: c_int,
    size: c_int,
    config: *const TeamConfig,
    config_mask: c_long,
    new_team: *mut TeamHandle,
) -> c_int {
    let call = "shmem_team_split_strided";
    let st = state(call);
    // SAFETY: the caller's handle.
    unsafe { set_out(new_team, std::ptr::null_mut()) };
    let Some(p) = resolve(st, parent) else {
        return -1;
    };
    let n = p.group.size as i64;
    let (start, stride) = (start as i64, stride as i64);
    let last = start + (size as i64 - 1) * stride;
    if size < 1 || !(0..n).contains(&start) || !(0..n).contains(&last) {
        return -1;
    }
    let Some(slots) = agree_slots(st, call, &p.group, 1) else {
        return -1;
    };
    if let Some((ws, wst)) = member(st, &p.group, start, stride, size as u32) {
        let t = make(
            st,
            ws,
            wst,
            size as u32,
            slots[0],
            config_of(config, config_mask),
        );
        // SAFETY: the caller's handle.
        unsafe { set_out(new_team, boxed(t)) };
    }
    0
}

#[no_mangle]
pub unsafe extern "C" fn shmem_team_split_2d(
    parent: TeamHandle,
    xrange: c_int,
    xaxis_config: *const TeamConfig,
    xaxis_mask: c_long,
    xaxis_team: *mut TeamHandle,
    yaxis_config: *const TeamConfig,
    yaxis_mask: c_long,
    yaxis_team: *mut TeamHandle,
) -> c_int {
    let call = "shmem_team_split_2d";
    let st = state(call);
    // SAFETY: the caller's handles.
    unsafe {
        set_out(xaxis_team, std::ptr::null_mut());
        set_out(yaxis_team, std::ptr::null_mut());
    }
    let Some(p) = resolve(st, parent) else {
        return -1;
    };
    if xrange < 1 {
        return -1;
    }
    let n = p.group.size as i64;
    let x = (xrange as i64).min(n);
    let Some(slots) = agree_slots(st, call, &p.group, 2) else {
        return -1;
    };
    let me = p.group.me as i64;
    let (row, col) = (me / x, me % x);
    let xsize = x.min(n - row * x) as u32;
    let ysize = ((n - col + x - 1) / x) as u32;
    let (xs, xst) = member(st, &p.group, row * x, 1, xsize).expect("a PE is in its row");
    let (ys, yst) = member(st, &p.group, col, x, ysize).expect("a PE is in its column");
    let xt = make(
        st,
        xs,
        xst,
        xsize,
        slots[0],
        config_of(xaxis_config, xaxis_mask),
    );
    let yt = make(
        st,
        ys,
        yst,
        ysize,
        slots[1],
        config_of(yaxis_config, yaxis_mask),
    );
    // SAFETY: the caller's handles.
    unsafe {
        set_out(xaxis_team, boxed(xt));
        set_out(yaxis_team, boxed(yt));
    }
    0
}

#[no_mangle]
pub unsafe extern "C" fn shmem_team_destroy(team: TeamHandle) {
    let st = state("shmem_team_destroy");
    if team.is_null() || team == world_handle() || team == shared_handle() {
        return;
    }
    // SAFETY: a team from a split (program contract: destroyed once).
    let t = unsafe { Box::from_raw(team as *mut Team) };
    // Its last collective left its counters at zero on this PE: the slot is reusable.
    coll::sync(st, "shmem_team_destroy", &t.group);
    USED.fetch_and(!(1 << t.slot), Ordering::AcqRel);
}

#[no_mangle]
pub unsafe extern "C" fn shmem_team_create_ctx(
    team: TeamHandle,
    options: c_long,
    ctx: *mut crate::api::CtxHandle,
) -> c_int {
    let st = state("shmem_team_create_ctx");
    if resolve(st, team).is_none() {
        if !ctx.is_null() {
            // SAFETY: the caller's handle.
            unsafe { ctx.write(std::ptr::null_mut()) };
        }
        return -1;
    }
    let c = Box::new(Ctx::new(options));
    c.team.store(team, Ordering::Release);
    let c = Box::into_raw(c);
    st.contexts
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(c as usize);
    if !ctx.is_null() {
        // SAFETY: the caller's handle.
        unsafe { ctx.write(c as crate::api::CtxHandle) };
    }
    0
}

#[no_mangle]
pub unsafe extern "C" fn shmem_ctx_get_team(
    ctx: crate::api::CtxHandle,
    team: *mut TeamHandle,
) -> c_int {
    let _st = state("shmem_ctx_get_team");
    if team.is_null() {
        return -1;
    }
    if ctx.is_null() {
        // SAFETY: the caller's handle.
        unsafe { team.write(std::ptr::null_mut()) };
        return -1;
    }
    let h = if ctx == crate::api::default_ctx() {
        world_handle()
    } else {
        // SAFETY: a context from shmem_ctx_create / shmem_team_create_ctx (program contract).
        let t = unsafe { &*(ctx as *const Ctx) }
            .team
            .load(Ordering::Acquire);
        if t.is_null() {
            world_handle()
        } else {
            t
        }
    };
    // SAFETY: the caller's handle.
    unsafe { team.write(h) };
    0
}

#[no_mangle]
pub extern "C" fn shmem_team_ptr(team: TeamHandle, dest: *const c_void, pe: c_int) -> *mut c_void {
    let st = state("shmem_team_ptr");
    let Some(t) = resolve(st, team) else {
        return std::ptr::null_mut();
    };
    if pe < 0 || pe as u32 >= t.group.size {
        return std::ptr::null_mut();
    }
    let w = t.group.world(pe as i64) as u32;
    match st.try_target(w, dest as *const u8, 1) {
        Some(crate::xlate::Target::Local(p)) | Some(crate::xlate::Target::Mapped(p)) => {
            p as *mut c_void
        }
        _ => std::ptr::null_mut(),
    }
}

#[no_mangle]
pub extern "C" fn shmem_team_sync(team: TeamHandle) -> c_int {
    let call = "shmem_team_sync";
    let st = state(call);
    let Some(t) = resolve(st, team) else {
        return -1;
    };
    coll::sync(st, call, &t.group);
    0
}

/// The world PE of PE `pe` of the team of context `ctx` (RMA and AMO on a team's context
/// number PEs in that team); `pe` itself for a world context. Out of range: `-1`.
pub fn ctx_world_pe(ctx: &Ctx, pe: c_int) -> c_int {
    let h = ctx.team.load(Ordering::Acquire);
    if h.is_null() || h == world_handle() {
        return pe;
    }
    let Some(st) = crate::state::try_state() else {
        return pe;
    };
    match resolve(st, h) {
        Some(t) if pe >= 0 && (pe as u32) < t.group.size => t.group.world(pe as i64) as c_int,
        _ => -1,
    }
}
