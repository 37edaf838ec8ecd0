//! Randomized runs of the protocol: several nodes, threads doing random reads and writes of a
//! few minipages, messages delivered in random interleavings (in order per channel). After
//! every step: at most one node can write a minipage, and then nobody else can read it; and
//! every read returns the value of the latest write (a single global order of accesses exists:
//! the order of the steps). A failure prints its seed.

use std::collections::{BTreeMap, VecDeque};

use unpinned_core::rng::{rng_for, Rng};
use unpinned_dsm::{Access, Event, FaultResult, Msg, Node};

#[derive(Clone, Copy, PartialEq)]
enum ThreadState {
    Ready,
    Blocked,
}

fn run(seed: u64) -> Result<u64, String> {
    let mut rng = rng_for(seed, "dsm-random");
    let nodes = rng.gen_range(1..=5u32);
    let threads_per_node = rng.gen_range(1..=3u32);
    let mps = rng.gen_range(1..=4u32);
    let mut ns: Vec<Node> = (0..nodes).map(|i| Node::new(i, nodes, 8)).collect();
    let mut chans: BTreeMap<(u32, u32), VecDeque<Msg>> = BTreeMap::new();
    let mut state = vec![ThreadState::Ready; (nodes * threads_per_node) as usize];
    // Each thread's current intended access, kept across a block so it retries the same one.
    let mut intent: Vec<Option<(u32, bool)>> = vec![None; state.len()];
    let mut truth = vec![0u64; mps as usize];
    let mut accesses = 0u64;
    for step in 0..4000 {
        // Route outputs.
        for n in 0..nodes {
            while let Some((dst, m)) = ns[n as usize].poll_message() {
                chans.entry((n, dst)).or_default().push_back(m);
            }
            while let Some(e) = ns[n as usize].poll_event() {
                if let Event::Resume { thread } = e {
                    state[(n * threads_per_node + thread) as usize] = ThreadState::Ready;
                }
            }
        }
        // Invariant: single writer or shared readers.
        for mp in 0..mps {
            let acc: Vec<Access> = ns.iter().map(|n| n.access(mp)).collect();
            let writers = acc.iter().filter(|a| **a == Access::Write).count();
            let readers = acc.iter().filter(|a| **a == Access::Read).count();
            if writers > 1 || (writers == 1 && readers > 0) {
                return Err(format!("step {step}: minipage {mp} has {writers} writers and {readers} readers: {acc:?}"));
            }
            if writers + readers == 0 && chans.values().all(|c| c.is_empty()) {
                return Err(format!("step {step}: minipage {mp} lost every copy"));
            }
        }
        // Pick: deliver a message or run a thread.
        let busy: Vec<(u32, u32)> = chans
            .iter()
            .filter(|(_, q)| !q.is_empty())
            .map(|(k, _)| *k)
            .collect();
        let ready: Vec<usize> = (0..state.len())
            .filter(|&t| state[t] == ThreadState::Ready)
            .collect();
        if busy.is_empty() && ready.is_empty() {
            return Err(format!(
                "step {step}: deadlock: every thread blocked and no message in flight"
            ));
        }
        if !busy.is_empty() && (ready.is_empty() || rng.gen_bool(0.6)) {
            let (src, dst) = busy[rng.gen_range(0..busy.len())];
            let m = chans.get_mut(&(src, dst)).unwrap().pop_front().unwrap();
            ns[dst as usize].handle_message(src, m);
            continue;
        }
        let t = ready[rng.gen_range(0..ready.len())];
        let (n, local) = (t as u32 / threads_per_node, t as u32 % threads_per_node);
        let (mp, write) =
            *intent[t].get_or_insert_with(|| (rng.gen_range(0..mps), rng.gen_bool(0.4)));
        match ns[n as usize].fault(local, mp, write) {
            FaultResult::Wait => state[t] = ThreadState::Blocked,
            FaultResult::Proceed => {
                intent[t] = None;
                accesses += 1;
                let node = &mut ns[n as usize];
                if write {
                    truth[mp as usize] += 1;
                    node.write(mp, &truth[mp as usize].to_le_bytes());
                } else {
                    let got = u64::from_le_bytes(node.read(mp)[..8].try_into().unwrap());
                    if got != truth[mp as usize] {
                        return Err(format!("step {step}: node {n} read {got} from minipage {mp}, the latest write is {}", truth[mp as usize]));
                    }
                }
            }
        }
    }
    Ok(accesses)
}

#[test]
fn random_schedules_keep_single_writer_and_latest_value() {
    let (mut total, mut runs) = (0, 0);
    unpinned_testkit::for_each_seed("cargo test -p unpinned-dsm --test random", 300, |seed| {
        match run(seed) {
            Ok(n) => total += n,
            Err(e) => panic!("seed {seed}: {e}"),
        }
        runs += 1;
    });
    assert!(
        total > runs * 100,
        "threads made progress ({total} accesses)"
    );
}
