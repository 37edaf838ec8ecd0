//! Live `dsm-protect` (spec dsm.md): the cost of a protection change of 1 and of 8 pages of a
//! Multiview view (a shared memfd mapping, pages present and dirty, as the live DSM has them):
//! one `mprotect` per page (the user-level baseline), one `mprotect` for the contiguous run
//! (the batched primitive the live DSM uses), and userfaultfd write-protection of the run
//! (`UFFDIO_WRITEPROTECT`, one ioctl). Each change is a downgrade from read-write to
//! read-only (the server's side of a read transfer), which needs a TLB flush.

use std::time::Instant;

use serde_json::json;
use unpinned_dsm::Access;
use unpinned_dsm_live::protect::{apply, Change, ProtectMode, UffdWp};
use unpinned_dsm_live::views::{ViewConfig, Views, PAGE_BYTES};
use unpinned_experiments::{
    Declared, ExperimentError, ExperimentOutput, ExperimentSpec, RunContext,
};
use unpinned_report::{PlotSpec, Table};

use super::{fail, median};

/// `dsm-protect`, live.
pub static SPEC: ExperimentSpec = ExperimentSpec {
    name: "dsm-protect",
    system: "live",
    description: "Live DSM: protection change of 1 and 8 pages: mprotect per page vs batched mprotect vs userfaultfd write-protect",
    params: Some(<Params as Declared>::PARAMS),
    run,
    ..ExperimentSpec::LIVE
};

fn changes(addr: u64, pages: usize, access: Access) -> Vec<Change> {
    (0..pages)
        .map(|p| Change {
            addr: addr + (p * PAGE_BYTES) as u64,
            pages: 1,
            access,
        })
        .collect()
}

fn touch(addr: u64, pages: usize, v: u8) {
    for p in 0..pages {
        // SAFETY: the experiment's own view, read-write at this point.
        unsafe { std::ptr::write_volatile((addr as usize + p * PAGE_BYTES) as *mut u8, v) };
    }
}

unpinned_experiments::declare_params! {
    /// Parameters of `dsm-protect`.
    pub struct Params {
        reps: usize {
            default: "300",
            unit: "",
            check: unpinned_experiments::params::int(1, 1_000_000),
            doc: "Timed repetitions per point, median (after 10 warm-up ones)",
        },
        base_addr: u64 {
            default: "101155069755392",
            unit: "",
            check: unpinned_experiments::params::Check::Any,
            doc: "Address of the DSM views (0x5c0000000000)",
        },
    }
}

fn run(ctx: &RunContext) -> Result<ExperimentOutput, ExperimentError> {
    let Params {
        reps,
        base_addr: base,
    } = ctx.params()?;
    let mut views = Views::new(ViewConfig {
        base_addr: base,
        heap_bytes: 1 << 20,
        virtual_bytes: 1 << 20,
        large_minipage_pages: 1,
    })
    .map_err(fail)?;
    let (addr, _) = views.alloc(8 * PAGE_BYTES, PAGE_BYTES).map_err(fail)?;
    apply(ProtectMode::Batched, &mut changes(addr, 8, Access::Write)).map_err(fail)?;
    let uffd = UffdWp::register(addr, 8 * PAGE_BYTES);
    let uffd_note = match &uffd {
        Ok(_) => "available".to_string(),
        Err(e) => format!("unavailable: {e}"),
    };
    let mut table = Table::new(&["mechanism", "pages", "time_us", "calls"]);
    let mechs = ["mprotect-per-page", "mprotect-batched", "uffd-wp"];
    let total = (mechs.len() * 2) as u64;
    let mut done = 0;
    for mech in mechs {
        for pages in [1usize, 8] {
            done += 1;
            if mech == "uffd-wp" && uffd.is_err() {
                (ctx.progress)(done, total);
                continue;
            }
            let mut t = Vec::with_capacity(reps);
            let mut calls = 0;
            for i in 0..reps.max(1) + 10 {
                touch(addr, pages, i as u8);
                let t0 = Instant::now();
                match mech {
                    "mprotect-per-page" => {
                        calls = apply(
                            ProtectMode::PerPage,
                            &mut changes(addr, pages, Access::Read),
                        )
                        .map_err(fail)?
                    }
                    "mprotect-batched" => {
                        calls = apply(
                            ProtectMode::Batched,
                            &mut changes(addr, pages, Access::Read),
                        )
                        .map_err(fail)?
                    }
                    _ => {
                        uffd.as_ref()
                            .map_err(|e| fail(e.to_string()))?
                            .write_protect(addr, pages, true)
                            .map_err(fail)?;
                        calls = 1;
                    }
                }
                let us = t0.elapsed().as_secs_f64() * 1e6;
                if i >= 10 {
                    t.push(us);
                }
                // Back to read-write (untimed) for the next repetition.
                match mech {
                    "uffd-wp" => uffd
                        .as_ref()
                        .map_err(|e| fail(e.to_string()))?
                        .write_protect(addr, pages, false)
                        .map_err(fail)?,
                    _ => {
                        apply(
                            ProtectMode::Batched,
                            &mut changes(addr, pages, Access::Write),
                        )
                        .map_err(fail)?;
                    }
                }
            }
            table.push(vec![
                mech.into(),
                (pages as u64).into(),
                median(t).into(),
                (calls as u64).into(),
            ]);
            (ctx.progress)(done, total);
        }
    }
    drop(uffd);
    drop(views);
    Ok(ExperimentOutput {
        table,
        plots: vec![PlotSpec::line(
            "Live protection change (RW -> RO) of a Multiview view",
            "mechanism",
            "time_us",
            Some("pages"),
        )
        .bars()],
        sim_events: 0,
        meta: json!({
            "reps": reps,
            "view": "8 pages of a MAP_SHARED memfd view at a fixed address, every page written before each change",
            "change": "read-write -> read-only (timed); back to read-write untimed",
            "userfaultfd_write_protect": uffd_note,
            "note": "time_us is the median over reps after 10 warm-up repetitions; calls is system calls per change",
        }),
    })
}
