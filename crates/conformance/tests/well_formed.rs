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
