//! [`ActiveRuntime`]: a live runtime whose engine accesses memory through Active Access
//! ([`ActiveMemory`]) and posts the reply flush's writes ([`ReplyHook`]), with this rank's
//! [`ActiveAccess`] beside it.

use std::ops::Deref;

use unpinned_live::transport::Transport;
use unpinned_live::{Config, LiveError, Runtime, TransportKind};

use crate::memory::ActiveMemory;
use crate::reply::ReplyHook;
use crate::ActiveAccess;

/// One rank of a live job with Active Access. Dereferences to its [`Runtime`] for everything
/// else (expose, write, read, wait, flush ...).
pub struct ActiveRuntime {
    /// Dropped first: its threads end before the Active Access state goes.
    rt: Runtime,
    pub(crate) active: ActiveAccess,
}

impl ActiveRuntime {
    /// Join the job described by the launcher's environment variables (as
    /// [`Runtime::from_env`]).
    pub fn from_env() -> Result<ActiveRuntime, LiveError> {
        let (cfg, kind) = Runtime::env_config()?;
        ActiveRuntime::connect(cfg, kind)
    }

    /// Open the transport `kind` and start (as [`Runtime::connect`]).
    pub fn connect(cfg: Config, kind: TransportKind) -> Result<ActiveRuntime, LiveError> {
        let active = ActiveAccess::new(cfg.rank);
        let rt = Runtime::connect_with_layer(cfg, kind, layer(&active))?;
        Ok(ActiveRuntime { rt, active })
    }

    /// Start on an already open transport (as [`Runtime::new`]).
    pub fn new(cfg: Config, transport: Box<dyn Transport>) -> Result<ActiveRuntime, LiveError> {
        let active = ActiveAccess::new(cfg.rank);
        let rt = Runtime::with_layer(cfg, transport, layer(&active))?;
        Ok(ActiveRuntime { rt, active })
    }

    /// The runtime underneath.
    pub fn runtime(&self) -> &Runtime {
        &self.rt
    }
}

/// How Active Access plugs into the engine loop: its memory decorator and its hook, both
/// sharing `active`'s state.
fn layer(
    active: &ActiveAccess,
) -> impl FnOnce(
    unpinned_live::memory::LiveMemory,
    unpinned_live::transport::Waker,
) -> (ActiveMemory, ReplyHook) {
    let state = active.state.clone();
    move |mem, wake| {
        state.replies.set_waker(wake);
        (ActiveMemory::new(mem, state.clone()), ReplyHook::new(state))
    }
}

impl Deref for ActiveRuntime {
    type Target = Runtime;

    fn deref(&self) -> &Runtime {
        &self.rt
    }
}
