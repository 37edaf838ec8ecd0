//! `unpinned-dsm-run APP [options]`: one rank of a DSM application on the live DSM (see the
//! crate doc of `unpinned_dsm_run`). Start it on N ranks with
//! `unpinned run -n N -- unpinned-dsm-run sor --threads 2 --context progress`.

use unpinned_dsm_run::{run_rank, RunArgs, EXIT_USAGE, EXIT_WRONG, USAGE};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!("{USAGE}");
        return;
    }
    let a = match RunArgs::parse(&args) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("unpinned-dsm-run: {e}\n{USAGE}");
            std::process::exit(EXIT_USAGE);
        }
    };
    match run_rank(&a) {
        Ok(None) => {}
        Ok(Some(r)) => {
            println!("{}", r.line());
            if let Some(p) = &a.result {
                let text = serde_json::to_string_pretty(&r).expect("a result serialises");
                if let Err(e) = std::fs::write(p, text) {
                    eprintln!("unpinned-dsm-run: writing {}: {e}", p.display());
                    std::process::exit(EXIT_WRONG);
                }
            }
            if !r.correct {
                std::process::exit(EXIT_WRONG);
            }
        }
        Err(e) => {
            eprintln!("unpinned-dsm-run ({}): {e}", a.app);
            std::process::exit(EXIT_WRONG);
        }
    }
}
