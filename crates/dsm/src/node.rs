//! One node of the DSM: its local copies and protections, its outstanding requests and
//! waiting threads (requestor role), what it serves (server role), and the minipages it
//! manages (manager role).

use std::collections::VecDeque;

use rustc_hash::FxHashMap;

use crate::manager::Managed;
use crate::msg::Msg;
use crate::{Mp, NodeId, ThreadId};

/// Local access to a minipage (what its page protection allows).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Access {
    /// No valid copy: any access faults.
    None,
    /// A valid read copy: writes fault.
    Read,
    /// The only copy, writable.
    Write,
}

/// Result of a fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultResult {
    /// The access is allowed now (another thread's request completed meanwhile).
    Proceed,
    /// The thread waits for [`Event::Resume`], then retries the access.
    Wait,
}

/// What the driver must do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// Change the protection of the minipage's virtual page(s) to `access`.
    SetAccess {
        /// Minipage.
        mp: Mp,
        /// New access.
        access: Access,
    },
    /// Wake the thread: it retries its access (and may fault again).
    Resume {
        /// Thread.
        thread: ThreadId,
    },
}

#[derive(Clone, Debug)]
struct Pending {
    write: bool,
    have_data: bool,
    notices: Option<u32>,
    notices_got: u32,
}

/// One node's protocol state.
pub struct Node {
    id: NodeId,
    nodes: u32,
    mp_bytes: usize,
    access: FxHashMap<Mp, Access>,
    data: FxHashMap<Mp, Vec<u8>>,
    pending: FxHashMap<Mp, Pending>,
    waiters: FxHashMap<Mp, Vec<ThreadId>>,
    managed: FxHashMap<Mp, Managed>,
    outbox: VecDeque<(NodeId, Msg)>,
    events: VecDeque<Event>,
}

impl Node {
    /// Node `id` of `nodes`, with minipages of `mp_bytes` bytes. The manager of a minipage
    /// (`mp % nodes`) starts with its only copy, writable and zero-filled.
    pub fn new(id: NodeId, nodes: u32, mp_bytes: usize) -> Node {
        assert!(nodes > 0 && id < nodes);
        Node {
            id,
            nodes,
            mp_bytes,
            access: FxHashMap::default(),
            data: FxHashMap::default(),
            pending: FxHashMap::default(),
            waiters: FxHashMap::default(),
            managed: FxHashMap::default(),
            outbox: VecDeque::new(),
            events: VecDeque::new(),
        }
    }

    /// The manager of `mp` (round-robin by id).
    pub fn manager_of(&self, mp: Mp) -> NodeId {
        mp % self.nodes
    }

    /// Current local access to `mp`.
    pub fn access(&self, mp: Mp) -> Access {
        match self.access.get(&mp) {
            Some(a) => *a,
            None if self.manager_of(mp) == self.id && !self.managed.contains_key(&mp) => {
                Access::Write
            }
            None => Access::None,
        }
    }

    /// The local copy of `mp` (valid only with `access(mp) != None`).
    pub fn bytes(&self, mp: Mp) -> &[u8] {
        self.data.get(&mp).map_or(&[][..], |v| &v[..])
    }

    /// Read the local copy (requires read access; the driver's page protection enforces it).
    pub fn read(&mut self, mp: Mp) -> Vec<u8> {
        assert!(
            self.access(mp) >= Access::Read,
            "read of minipage {mp} without access"
        );
        self.ensure_data(mp).clone()
    }

    /// Write the local copy (requires write access).
    pub fn write(&mut self, mp: Mp, bytes: &[u8]) {
        assert_eq!(
            self.access(mp),
            Access::Write,
            "write of minipage {mp} without write access"
        );
        let d = self.ensure_data(mp);
        d[..bytes.len()].copy_from_slice(bytes);
    }

    fn ensure_data(&mut self, mp: Mp) -> &mut Vec<u8> {
        let n = self.mp_bytes;
        self.data.entry(mp).or_insert_with(|| vec![0; n])
    }

    fn managed(&mut self, mp: Mp) -> &mut Managed {
        let id = self.id;
        // First use: the implicit initial state (this node writable) becomes explicit.
        if !self.managed.contains_key(&mp) {
            self.access.entry(mp).or_insert(Access::Write);
        }
        self.managed.entry(mp).or_insert_with(|| Managed::new(id))
    }

    fn set_access(&mut self, mp: Mp, access: Access) {
        if self.manager_of(mp) == self.id {
            // Make the manager's implicit initial state explicit before it changes.
            self.managed(mp);
        }
        self.access.insert(mp, access);
        if access == Access::None {
            self.data.remove(&mp);
        }
        self.events.push_back(Event::SetAccess { mp, access });
    }

    /// Thread `thread` faulted on `mp` wanting `write` access (synchronous entry: reads
    /// coherence state, queues the thread, sends at most one request per minipage).
    pub fn fault(&mut self, thread: ThreadId, mp: Mp, write: bool) -> FaultResult {
        let need = if write { Access::Write } else { Access::Read };
        if self.access(mp) >= need {
            return FaultResult::Proceed;
        }
        self.waiters.entry(mp).or_default().push(thread);
        // A request already outstanding: join its wait queue. If it was for reading and this
        // thread wants to write, the thread faults again after the read completes.
        if !self.pending.contains_key(&mp) {
            self.pending.insert(
                mp,
                Pending {
                    write,
                    have_data: false,
                    notices: None,
                    notices_got: 0,
                },
            );
            let m = self.manager_of(mp);
            self.outbox.push_back((
                m,
                Msg::Request {
                    mp,
                    from: self.id,
                    write,
                },
            ));
        }
        FaultResult::Wait
    }

    /// A message arrived (asynchronous entry: never blocks).
    pub fn handle_message(&mut self, from: NodeId, msg: Msg) {
        let _ = from;
        match msg {
            Msg::Request { mp, from, write } => {
                let m = self.managed(mp);
                if m.busy {
                    m.queue.push_back((from, write));
                } else {
                    m.busy = true;
                    let out = m.serve(mp, from, write);
                    self.outbox.extend(out);
                }
            }
            Msg::Invalidate { mp, requestor } => {
                if self.access(mp) != Access::None {
                    self.set_access(mp, Access::None);
                }
                self.outbox.push_back((requestor, Msg::Invalidated { mp }));
            }
            Msg::Transfer {
                mp,
                requestor,
                write,
                notices,
            } => {
                let bytes = self.ensure_data(mp).clone();
                self.outbox.push_back((
                    requestor,
                    Msg::Data {
                        mp,
                        write,
                        notices,
                        bytes,
                    },
                ));
                if write {
                    self.set_access(mp, Access::None);
                } else if self.access(mp) == Access::Write {
                    self.set_access(mp, Access::Read);
                }
            }
            Msg::Grant { mp, notices } => {
                if let Some(p) = self.pending.get_mut(&mp) {
                    p.have_data = true;
                    p.notices = Some(notices);
                }
                self.try_complete(mp);
            }
            Msg::Data {
                mp,
                write: _,
                notices,
                bytes,
            } => {
                self.data.insert(mp, bytes);
                if let Some(p) = self.pending.get_mut(&mp) {
                    p.have_data = true;
                    p.notices = Some(notices);
                }
                self.try_complete(mp);
            }
            Msg::Invalidated { mp } => {
                if let Some(p) = self.pending.get_mut(&mp) {
                    p.notices_got += 1;
                }
                self.try_complete(mp);
            }
            Msg::Ack { mp, from, write } => {
                let m = self.managed(mp);
                m.done(from, write);
                if let Some((next, w)) = m.queue.pop_front() {
                    m.busy = true;
                    let out = m.serve(mp, next, w);
                    self.outbox.extend(out);
                }
            }
        }
    }

    fn try_complete(&mut self, mp: Mp) {
        let Some(p) = self.pending.get(&mp) else {
            return;
        };
        if !(p.have_data && p.notices == Some(p.notices_got)) {
            return;
        }
        let write = p.write;
        self.pending.remove(&mp);
        self.set_access(mp, if write { Access::Write } else { Access::Read });
        for thread in self.waiters.remove(&mp).unwrap_or_default() {
            self.events.push_back(Event::Resume { thread });
        }
        let m = self.manager_of(mp);
        self.outbox.push_back((
            m,
            Msg::Ack {
                mp,
                from: self.id,
                write,
            },
        ));
    }

    /// The next message to send: (destination, message). Messages to this node itself are
    /// returned too (the driver delivers them like any other, in order).
    pub fn poll_message(&mut self) -> Option<(NodeId, Msg)> {
        self.outbox.pop_front()
    }

    /// The next event for the driver.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// The manager's record of `mp` as (owner, nodes with a valid copy), on its manager only
    /// (`None` elsewhere). A driver uses it to let a read be served by an RDMA read from a
    /// shared copy instead of a transfer notice (spec: "may pull the data with an RDMA read").
    pub fn manager_view(&self, mp: Mp) -> Option<(Option<NodeId>, Vec<NodeId>)> {
        if self.manager_of(mp) != self.id {
            return None;
        }
        Some(match self.managed.get(&mp) {
            Some(m) => (m.owner, m.copies.clone()),
            None => (Some(self.id), vec![self.id]),
        })
    }

    /// No request outstanding and nothing to send.
    pub fn is_idle(&self) -> bool {
        self.pending.is_empty() && self.outbox.is_empty()
    }
}
