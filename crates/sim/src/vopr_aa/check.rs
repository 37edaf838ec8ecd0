//! The AA swarm's checkers, run when every request has completed and the logs are drained:
//! per request its status (success, or the protection error of a designed-to-fail request),
//! its bytes, its log entry (exactly one, of the right kind, with the right data, or none),
//! then no log entry without a request, and the access counters.

use rustc_hash::FxHashMap;
use unpinned_aa::log::{EntryKind, LogEntry};
use unpinned_core::api::{CompletionError, Op};

use super::{Designed, PageKind, Req, Swarm, GET_BASE, LANE, PDID, TGT_BASE};

/// What the target holds after a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum After {
    /// The put's source bytes.
    Source,
    /// What it held before.
    Unchanged,
}

/// The log entry a request leaves at its target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Entry {
    None,
    /// Exactly one of this kind; `data`: carrying the put's source or the get's bytes.
    One(EntryKind, bool),
    /// A refused access on a fault page: at most one `Fault` entry (it is logged with the
    /// packet at offset 0, which may not arrive before the refusal ends the request).
    MaybeFault,
}

fn expect(r: &Req) -> (Result<(), CompletionError>, After, Entry) {
    use PageKind::*;
    let refused = Err(CompletionError::RemoteAccess);
    if r.designed != Designed::Normal {
        return (refused, After::Unchanged, Entry::None);
    }
    match r.op {
        Op::Write => match r.kind {
            Plain | LogGetData => (Ok(()), After::Source, Entry::None),
            TrackPuts | CountAll => (Ok(()), After::Source, Entry::One(EntryKind::PutMeta, false)),
            PutData => (Ok(()), After::Source, Entry::One(EntryKind::PutData, true)),
            ActivePut => (
                Ok(()),
                After::Unchanged,
                Entry::One(EntryKind::ActivePut, true),
            ),
            FaultAccess => (refused, After::Unchanged, Entry::MaybeFault),
            FaultSystem | NoLog => (refused, After::Unchanged, Entry::None),
        },
        Op::Read => match r.kind {
            Plain | TrackPuts | PutData | ActivePut | NoLog => {
                (Ok(()), After::Unchanged, Entry::None)
            }
            CountAll => (
                Ok(()),
                After::Unchanged,
                Entry::One(EntryKind::GetMeta, false),
            ),
            LogGetData => (
                Ok(()),
                After::Unchanged,
                Entry::One(EntryKind::GetData, true),
            ),
            FaultAccess => (refused, After::Unchanged, Entry::MaybeFault),
            FaultSystem => (refused, After::Unchanged, Entry::None),
        },
    }
}

/// Every check; the first broken one is the error.
pub(crate) fn all(s: &mut Swarm) -> Result<(), String> {
    // Entries by (target node, source, address, length).
    let mut by_access: FxHashMap<(u32, u32, u64, u32), Vec<LogEntry>> = FxHashMap::default();
    for (node, es) in s.entries.iter().enumerate() {
        for e in es {
            let h = &e.header;
            by_access
                .entry((node as u32, h.source, h.addr, h.access_len))
                .or_default()
                .push(e.clone());
        }
    }
    for (i, r) in s.reqs.iter().enumerate() {
        let what = || {
            format!(
                "request {i} ({:?} {:?} of {} B from node {} to node {} at {:#x}, {:?} page)",
                r.designed, r.op, r.len, r.src, r.dst, r.addr, r.kind
            )
        };
        let Some(status) = r.status else {
            return Err(format!("{}: never completed", what()));
        };
        let (want, after, entry) = expect(r);
        let entries = by_access
            .remove(&(r.dst, r.src, r.addr, r.len as u32))
            .unwrap_or_default();
        let gave_up = r.in_safety && status == Err(CompletionError::RetryExceeded);
        if gave_up {
            s.report.gave_up_under_faults += 1;
            if entries.len() > 1 {
                return Err(format!("{}: {} log entries", what(), entries.len()));
            }
            continue;
        }
        if want.is_err() {
            s.report.designed_to_fail += 1;
        }
        if status != want {
            return Err(format!(
                "{}: completed {status:?}, expected {want:?}",
                what()
            ));
        }
        // Bytes at the target.
        let mut now = vec![0u8; r.len as usize];
        s.sim.node(r.dst).mem.host_read(PDID, r.addr, &mut now);
        let expected_bytes = match after {
            After::Source => &r.src_bytes,
            After::Unchanged => &r.tgt_before,
        };
        if &now != expected_bytes {
            return Err(format!(
                "{}: the target holds {} bytes, expected {after:?}",
                what(),
                if now == r.src_bytes {
                    "the source's"
                } else {
                    "other"
                }
            ));
        }
        // A get returned the target's bytes.
        if r.op == Op::Read && status.is_ok() {
            let mut got = vec![0u8; r.len as usize];
            s.sim
                .node(r.src)
                .mem
                .host_read(PDID, GET_BASE + i as u64 * LANE, &mut got);
            if got != r.tgt_before {
                return Err(format!("{}: the get returned other bytes", what()));
            }
        }
        // Its log entry.
        match entry {
            Entry::None if !entries.is_empty() => {
                return Err(format!(
                    "{}: logged {} entries ({:?}), expected none",
                    what(),
                    entries.len(),
                    entries[0].header.kind
                ))
            }
            Entry::None => {}
            Entry::MaybeFault => {
                if entries.len() > 1 || entries.iter().any(|e| e.header.kind != EntryKind::Fault) {
                    return Err(format!(
                        "{}: {} entries, expected at most one Fault",
                        what(),
                        entries.len()
                    ));
                }
            }
            Entry::One(kind, data) => {
                if entries.len() != 1 {
                    return Err(format!(
                        "{}: {} log entries, expected exactly one {kind:?}",
                        what(),
                        entries.len()
                    ));
                }
                let e = &entries[0];
                if e.header.kind != kind {
                    return Err(format!(
                        "{}: logged {:?}, expected {kind:?}",
                        what(),
                        e.header.kind
                    ));
                }
                let want_data: &[u8] = match (data, r.op) {
                    (false, _) => &[],
                    (true, Op::Write) => &r.src_bytes,
                    (true, Op::Read) => &r.tgt_before,
                };
                if e.data != want_data {
                    return Err(format!(
                        "{}: the entry carries {} bytes that differ from the access's {}",
                        what(),
                        e.data.len(),
                        want_data.len()
                    ));
                }
            }
        }
    }
    if let Some(((node, src, addr, len), es)) = by_access.into_iter().next() {
        return Err(format!(
            "node {node} logged {} entries ({:?}) of an access from node {src} at {addr:#x} of {len} B that no request made",
            es.len(),
            es[0].header.kind
        ));
    }
    // Access counters: one count per served logged access, per lane (object).
    for (node, es) in s.entries.iter().enumerate() {
        let mut want: FxHashMap<u64, u64> = FxHashMap::default();
        for e in es {
            if matches!(
                e.header.kind,
                EntryKind::PutMeta | EntryKind::GetMeta | EntryKind::PutData | EntryKind::GetData
            ) {
                *want.entry((e.header.addr - TGT_BASE) / LANE).or_default() += 1;
            }
        }
        let total: u64 = want.values().sum();
        if s.counters[node].total() != total
            || want
                .iter()
                .any(|(&obj, &n)| s.counters[node].count(obj) != n)
        {
            return Err(format!(
                "node {node}: the access counter counted {} accesses, the log holds {total}",
                s.counters[node].total()
            ));
        }
    }
    Ok(())
}
