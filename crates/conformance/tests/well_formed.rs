//! Every scenario is one a driver can run: names unique, regions and requests on the
//! scenario's nodes, each request between a node's own region and another node's, local ranges
//! inside their region (only remote ranges may be wrong on purpose: that is what the
//! protection checks are for), and concurrent requests never target the same bytes (their
//! outcome would depend on timing).

use std::collections::BTreeSet;

use unpinned_conformance::{scenarios, Op, Scenario};

fn check(s: &Scenario) -> Result<(), String> {
    if s.nodes < 2 {
        return Err("fewer than 2 nodes".into());
    }
    for (i, r) in s.regions.iter().enumerate() {
        if r.node >= s.nodes || r.len == 0 {
            return Err(format!(
                "region {i}: node {} of {}, len {}",
                r.node, s.nodes, r.len
            ));
        }
    }
    let mut written: Vec<(usize, u64, u64)> = Vec::new();
    for (k, q) in s.requests.iter().enumerate() {
        let (Some(local), Some(remote)) = (s.regions.get(q.local.0), s.regions.get(q.remote.0))
        else {
            return Err(format!("request {k}: no such region"));
        };
        if local.node != q.node || remote.node == q.node {
            return Err(format!(
                "request {k}: not from node {}'s region to a peer's",
                q.node
            ));
        }
        if q.len == 0 || q.local.1 + q.len > local.len {
            return Err(format!(
                "request {k}: local range outside region {}",
                q.local.0
            ));
        }
        let target = match q.op {
            Op::Write => (q.remote.0, q.remote.1, q.remote.1 + q.len),
            Op::Read => (q.local.0, q.local.1, q.local.1 + q.len),
        };
        if !s.sequential
            && written
                .iter()
                .any(|&(r, a, b)| r == target.0 && a < target.2 && target.1 < b)
        {
            return Err(format!(
                "request {k}: concurrent with a request to the same bytes"
            ));
        }
        written.push(target);
    }
    Ok(())
}

#[test]
fn every_scenario_is_well_formed() {
    let all = scenarios();
    assert!(!all.is_empty());
    let names: BTreeSet<&str> = all.iter().map(|s| s.name).collect();
    assert_eq!(names.len(), all.len(), "scenario names repeat");
    for s in &all {
        check(s).unwrap_or_else(|e| panic!("scenario {}: {e}", s.name));
    }
}

#[test]
fn the_check_refuses_a_request_from_a_foreign_region() {
    let mut s = scenarios().remove(0);
    s.requests[0].node = s.regions[s.requests[0].remote.0].node;
    assert!(check(&s).is_err());
}

mod msg {
    use std::collections::BTreeSet;

    use unpinned_conformance::msg::{check, expected, scenarios, Failure, Layer, Step};

    #[test]
    fn every_message_scenario_is_well_formed() {
        let all = scenarios();
        assert!(!all.is_empty());
        let names: BTreeSet<&str> = all.iter().map(|s| s.name).collect();
        assert_eq!(names.len(), all.len(), "scenario names repeat");
        for s in &all {
            check(s).unwrap_or_else(|e| panic!("scenario {}: {e}", s.name));
        }
    }

    #[test]
    fn the_check_refuses_batched_credits_and_double_posts() {
        let mut s = scenarios().remove(0);
        s.layer = Layer {
            slots_per_peer: 4,
            ..s.layer
        };
        assert!(check(&s).is_err());
        let mut s = scenarios().remove(0);
        s.steps.push(Step::Send(0));
        assert!(check(&s).is_err());
    }

    /// The expectation, worked out by hand for the scenario where credits hold sends back
    /// (2 slots; 3 KB eager, 9 KB rendezvous, 50 B eager, 5 KB rendezvous, 4 KB eager; then
    /// one receive per settle).
    #[test]
    fn the_expectation_follows_credits_and_the_rendezvous() {
        let s = scenarios()
            .into_iter()
            .find(|s| s.name.starts_with("receives posted after"))
            .expect("scenario");
        let e = expected(&s);
        let settles: Vec<Option<u32>> = e
            .sends
            .iter()
            .map(|d| d.as_ref().map(|d| d.settle))
            .collect();
        // Send 0 fits the window at once; 1 waits for its receive (settle 2); 2 gets the
        // credit of receive 0 (settle 1); 3 and 4 wait for the last receives.
        assert_eq!(settles, [Some(0), Some(2), Some(1), Some(3), Some(3)]);
        let recvs: Vec<(u32, u64)> = e
            .recvs
            .iter()
            .map(|d| d.as_ref().map(|d| (d.settle, d.seq)).unwrap())
            .collect();
        assert_eq!(recvs, [(1, 1), (2, 2), (3, 3), (3, 4), (3, 5)]);
    }

    #[test]
    fn the_expectation_names_the_errors() {
        let s = scenarios()
            .into_iter()
            .find(|s| s.name.starts_with("errors"))
            .expect("scenario");
        let e = expected(&s);
        let results: Vec<_> = e
            .recvs
            .iter()
            .map(|d| d.as_ref().unwrap().result.clone())
            .collect();
        assert_eq!(
            results,
            [
                Err(Failure::Truncated {
                    msg_bytes: 100,
                    buf_bytes: 99
                }),
                Err(Failure::Truncated {
                    msg_bytes: 10_000,
                    buf_bytes: 8192
                }),
                Err(Failure::TagMismatch { got: 2, want: 9 }),
                Err(Failure::TagMismatch { got: 2, want: 9 }),
                Ok(4000),
                Ok(7000),
                Err(Failure::TagMismatch { got: 4, want: 5 }),
            ]
        );
        // Every send finishes, refused or not.
        assert!(e.sends.iter().all(|d| d.is_some()));
    }
}

mod msg_differences {
    use unpinned_conformance::msg::{differences, expected, scenarios};

    #[test]
    fn differences_name_what_differs() {
        let s = scenarios().remove(0);
        let want = expected(&s);
        assert!(differences(&want, &want).is_empty());
        let mut got = want.clone();
        got.buffers[2] ^= 1;
        got.recvs[1] = None;
        got.anomalies.push("x".into());
        let d = differences(&got, &want);
        assert_eq!(d.len(), 3, "{d:?}");
        assert!(d[0].starts_with("recv 1:") && d[1].starts_with("recv 2: buffer"));
    }
}
