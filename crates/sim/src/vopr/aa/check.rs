//! The AA swarm's own checks, run when every request has completed and the logs are drained
//! (status, bytes and protection per request are the kernel's transport checkers', fed as
//! requests complete): per request its log entry (exactly one, of the right kind, with the
//! right data, or none), no log entry without a request, and the access counters.

use rustc_hash::FxHashMap;
use unpinned_aa::log::{EntryKind, LogEntry};
use unpinned_core::api::{CompletionError, Op};

use super::{Designed, PageKind, Req, Swarm, LANE, TGT_BASE};

/// What the target holds after a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum After {
    /// The put's source bytes.
    Source,
    /// What it held before.
    Unchanged,
}

/// The log entry a request leaves at its target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Entry {
    None,
    /// Exactly one of this kind; `data`: carrying the put's source or the get's bytes.
    One(EntryKind, bool),
    /// A refused access on a fault page: at most one `Fault` entry (it is logged with the
    /// packet at offset 0, which may not arrive before the refusal ends the request).
    MaybeFault,
}

pub(crate) fn expect(r: &Req) -> (Result<(), CompletionError>, After, Entry) {
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

/// The log and counter checks; each violation is pushed to `out` as (checker, what).
pub(crate) fn logs(s: &Swarm, out: &mut Vec<(&'static str, String)>) {
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
        let entries = by_access
            .remove(&(r.dst, r.src, r.addr, r.len as u32))
            .unwrap_or_default();
        let (want, _, entry) = expect(r);
        let Some(status) = r.status else {
            continue; // reported by the kernel's exactly-once checker
        };
        if status != want {
            // Failed otherwise (a transport error under faults, or a violation the success
            // checker reports): at most the entry it would have made.
            if entries.len() > 1 {
                out.push(("log", format!("{}: {} log entries", what(), entries.len())));
            }
            continue;
        }
        match entry {
            Entry::None if !entries.is_empty() => out.push((
                "log",
                format!(
                    "{}: logged {} entries ({:?}), expected none",
                    what(),
                    entries.len(),
                    entries[0].header.kind
                ),
            )),
            Entry::None => {}
            Entry::MaybeFault => {
                if entries.len() > 1 || entries.iter().any(|e| e.header.kind != EntryKind::Fault) {
                    out.push((
                        "log",
                        format!(
                            "{}: {} entries, expected at most one Fault",
                            what(),
                            entries.len()
                        ),
                    ));
                }
            }
            Entry::One(kind, data) => {
                if entries.len() != 1 {
                    out.push((
                        "log",
                        format!(
                            "{}: {} log entries, expected exactly one {kind:?}",
                            what(),
                            entries.len()
                        ),
                    ));
                    continue;
                }
                let e = &entries[0];
                if e.header.kind != kind {
                    out.push((
                        "log",
                        format!("{}: logged {:?}, expected {kind:?}", what(), e.header.kind),
                    ));
                }
                let want_data: &[u8] = match (data, r.op) {
                    (false, _) => &[],
                    (true, Op::Write) => &r.src_bytes,
                    (true, Op::Read) => &r.tgt_before,
                };
                if e.data != want_data {
                    out.push((
                        "log",
                        format!(
                            "{}: the entry carries {} bytes that differ from the access's {}",
                            what(),
                            e.data.len(),
                            want_data.len()
                        ),
                    ));
                }
            }
        }
    }
    for ((node, src, addr, len), es) in by_access {
        out.push((
            "log",
            format!(
                "node {node} logged {} entries ({:?}) of an access from node {src} at {addr:#x} of {len} B that no request made",
                es.len(),
                es[0].header.kind
            ),
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
            out.push((
                "counter",
                format!(
                    "node {node}: the access counter counted {} accesses, the log holds {total}",
                    s.counters[node].total()
                ),
            ));
        }
    }
}
