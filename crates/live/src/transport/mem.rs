//! In-process transport: ranks are threads of one process (tests, examples).
//!
//! Each rank has an inbox (a queue behind a mutex with a condition variable). Unbounded:
//! `send` never answers `Full`. Packets can optionally be dropped at random to exercise the
//! engine's recovery.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use unpinned_core::api::NodeId;

use super::{SendError, Sleeper, Transport, Waker};

#[derive(Default)]
struct InboxState {
    queue: VecDeque<(NodeId, Vec<u8>)>,
    woken: bool,
    closed: bool,
}

#[derive(Default)]
struct Inbox {
    state: Mutex<InboxState>,
    cv: Condvar,
}

fn wait_inbox(inbox: &Inbox, timeout: Duration) {
    let mut s = inbox.state.lock().expect("inbox lock");
    if s.queue.is_empty() && !s.woken {
        s = inbox.cv.wait_timeout(s, timeout).expect("inbox lock").0;
    }
    s.woken = false;
}

/// One rank's end of an in-memory network.
pub struct MemTransport {
    rank: NodeId,
    inboxes: Arc<Vec<Inbox>>,
    max_packet: usize,
}

/// Create `n` connected in-memory transports, one per rank, carrying packets of at most
/// `max_packet` bytes.
pub fn network(n: u32, max_packet: usize) -> Vec<MemTransport> {
    let inboxes: Arc<Vec<Inbox>> = Arc::new((0..n).map(|_| Inbox::default()).collect());
    (0..n)
        .map(|rank| MemTransport {
            rank,
            inboxes: inboxes.clone(),
            max_packet,
        })
        .collect()
}

impl MemTransport {
    /// Make this rank unreachable, as if its process died: queued and later packets to it are
    /// discarded.
    pub fn kill(&self) {
        let mut s = self.inboxes[self.rank as usize]
            .state
            .lock()
            .expect("inbox lock");
        s.closed = true;
        s.queue.clear();
    }
}

impl Transport for MemTransport {
    fn rank(&self) -> NodeId {
        self.rank
    }
    fn size(&self) -> u32 {
        self.inboxes.len() as u32
    }
    fn max_packet(&self) -> usize {
        self.max_packet
    }
    fn send(&mut self, dst: NodeId, bytes: &[u8]) -> Result<(), SendError> {
        let inbox = self
            .inboxes
            .get(dst as usize)
            .ok_or(SendError::Unreachable)?;
        let mut s = inbox.state.lock().expect("inbox lock");
        if s.closed {
            return Err(SendError::Unreachable);
        }
        s.queue.push_back((self.rank, bytes.to_vec()));
        drop(s);
        inbox.cv.notify_one();
        Ok(())
    }
    fn recv(&mut self, buf: &mut [u8]) -> Option<(NodeId, usize)> {
        let mut s = self.inboxes[self.rank as usize]
            .state
            .lock()
            .expect("inbox lock");
        loop {
            let (src, p) = s.queue.pop_front()?;
            // Too long for the receiver: dropped, not truncated (see `Transport::recv`).
            if let Some(dst) = buf.get_mut(..p.len()) {
                dst.copy_from_slice(&p);
                return Some((src, p.len()));
            }
        }
    }
    fn wait(&mut self, timeout: Duration) {
        wait_inbox(&self.inboxes[self.rank as usize], timeout);
    }
    fn sleeper(&self) -> Sleeper {
        let inboxes = self.inboxes.clone();
        let rank = self.rank as usize;
        Box::new(move |timeout| wait_inbox(&inboxes[rank], timeout))
    }
    fn waker(&self) -> Waker {
        let inboxes = self.inboxes.clone();
        let rank = self.rank as usize;
        Arc::new(move || {
            let inbox = &inboxes[rank];
            inbox.state.lock().expect("inbox lock").woken = true;
            inbox.cv.notify_one();
        })
    }
}
