//! The spec's inputs (slow: minutes). `UNPINNED_DSM_SPEC=1 cargo test --release -p
//! unpinned-dsm-apps --test spec_inputs -- --ignored` runs each app with them on 4 workers.

use unpinned_dsm_apps::{create, names, run_local, Input};

#[test]
#[ignore]
fn every_app_runs_the_spec_input_correctly() {
    let only = std::env::var("UNPINNED_DSM_SPEC_APPS").unwrap_or_default();
    for name in names() {
        if !only.is_empty() && !only.split(',').any(|a| a == *name) {
            continue;
        }
        let t = std::time::Instant::now();
        let mut app = create(name, Input::Spec).unwrap();
        run_local(app.as_mut(), 2, 2).unwrap_or_else(|e| panic!("{name}: {e}"));
        eprintln!(
            "{name}: spec input on 2x2 workers correct in {:.1} s",
            t.elapsed().as_secs_f64()
        );
    }
}
