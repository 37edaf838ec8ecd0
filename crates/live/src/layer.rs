//! Where a layer above the live runtime plugs into the engine loop (crates/aa-live, Active
//! Access, is one): the engine's memory, and a [`TurnHook`] that sees each turn and each
//! completion.
//!
//! The runtime is generic over both ([`crate::Runtime::with_layer`]); the engine loop and its
//! per-packet path are compiled for the layer's types (no virtual call per packet). A plain
//! runtime ([`crate::Runtime::new`]) uses [`LiveMemory`] itself and [`NoHook`].

use unpinned_core::api::Completion;
use unpinned_core::memory::Memory;
use unpinned_core::time::Instant;
use unpinned_part::PartEngine;

use crate::memory::LiveMemory;

/// The memory the engine of a live runtime accesses: [`LiveMemory`], or a layer's decorator
/// around one (the runtime still tunes and informs the [`LiveMemory`] inside: residency TTL,
/// translation cache, fill-on-access ranges, pages brought in).
pub trait EngineMemory: Memory + AsRef<LiveMemory> + AsMut<LiveMemory> + Send + 'static {}

impl<T: Memory + AsRef<LiveMemory> + AsMut<LiveMemory> + Send + 'static> EngineMemory for T {}

impl AsRef<LiveMemory> for LiveMemory {
    fn as_ref(&self) -> &LiveMemory {
        self
    }
}

impl AsMut<LiveMemory> for LiveMemory {
    fn as_mut(&mut self) -> &mut LiveMemory {
        self
    }
}

/// What a layer sees of the engine loop. Both calls run on the thread driving the engine,
/// under the engine's lock, at every turn: keep them short (one atomic load when idle).
pub trait TurnHook: Send + 'static {
    /// At the start of every turn: the layer may post its own work requests (their ids must
    /// not collide with the application's, which count up from 1). `now` reads the engine's
    /// clock (only call it when posting).
    fn before_turn(&mut self, engine: &mut PartEngine, now: &mut dyn FnMut() -> Instant);

    /// A completion of the engine: `true` if it belongs to the layer (one of its own work
    /// requests), which keeps it from the application's completion queue.
    fn completed(&mut self, c: &Completion) -> bool;
}

/// No layer: every completion is the application's.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoHook;

impl TurnHook for NoHook {
    #[inline]
    fn before_turn(&mut self, _engine: &mut PartEngine, _now: &mut dyn FnMut() -> Instant) {}

    #[inline]
    fn completed(&mut self, _c: &Completion) -> bool {
        false
    }
}
