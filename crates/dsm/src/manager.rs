//! The manager side: per minipage it manages, who owns it, who has copies, and the requests
//! waiting their turn (requests for one minipage are served one at a time, in arrival order).

use std::collections::VecDeque;

use crate::msg::Msg;
use crate::{Mp, NodeId};

/// What the manager knows of one minipage.
#[derive(Clone, Debug)]
pub(crate) struct Managed {
    /// The node with write access, if any.
    pub owner: Option<NodeId>,
    /// Nodes with a valid copy (the owner included).
    pub copies: Vec<NodeId>,
    /// A request is being served.
    pub busy: bool,
    /// Requests waiting: (from, write).
    pub queue: VecDeque<(NodeId, bool)>,
}

impl Managed {
    /// Initially the manager itself holds the only copy, with write access.
    pub fn new(manager: NodeId) -> Managed {
        Managed {
            owner: Some(manager),
            copies: vec![manager],
            busy: false,
            queue: VecDeque::new(),
        }
    }

    /// Start serving the request of `from`: the messages that do it. The caller marks `busy`.
    pub fn serve(&self, mp: Mp, from: NodeId, write: bool) -> Vec<(NodeId, Msg)> {
        let mut out = Vec::new();
        let has_copy = self.copies.contains(&from);
        if write {
            // Every other copy is invalidated; the owner (or a copy holder) serves the data.
            let server = self
                .owner
                .or_else(|| self.copies.first().copied())
                .expect("a minipage always has a copy");
            let mut invalidate: Vec<NodeId> = self
                .copies
                .iter()
                .copied()
                .filter(|&n| n != from && (has_copy || n != server))
                .collect();
            invalidate.sort_unstable();
            let notices = invalidate.len() as u32;
            for n in invalidate {
                out.push((
                    n,
                    Msg::Invalidate {
                        mp,
                        requestor: from,
                    },
                ));
            }
            if has_copy {
                out.push((from, Msg::Grant { mp, notices }));
            } else {
                out.push((
                    server,
                    Msg::Transfer {
                        mp,
                        requestor: from,
                        write: true,
                        notices,
                    },
                ));
            }
        } else {
            let server = self
                .owner
                .or_else(|| self.copies.first().copied())
                .expect("a minipage always has a copy");
            out.push((
                server,
                Msg::Transfer {
                    mp,
                    requestor: from,
                    write: false,
                    notices: 0,
                },
            ));
        }
        out
    }

    /// The requestor acknowledged: record the new state.
    pub fn done(&mut self, from: NodeId, write: bool) {
        if write {
            self.owner = Some(from);
            self.copies = vec![from];
        } else {
            // A writer that served a read keeps a read copy.
            self.owner = None;
            if !self.copies.contains(&from) {
                self.copies.push(from);
            }
        }
        self.busy = false;
    }
}
