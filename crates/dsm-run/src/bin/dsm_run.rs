//! `unpinned-dsm-run APP [options]`: one rank of a DSM application on the live DSM (see the
//! crate doc of `unpinned_dsm_run`). Start it on N ranks with
//! `unpinned run -n N -- unpinned-dsm-run sor --threads 2 --context progress`.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(unpinned_dsm_run::main_with(&args));
}
