//! The library's own section of the job's overrides (`UNPINNED_SET` / `oshrun --set`):
//! `shmem.KEY=VALUE`, which the launcher leaves to the PEs
//! (`unpinned_live::edge::LAYER_SECTIONS`).

use unpinned_live::config::KnobRow;

/// Runtime settings `oshrun` puts before the job's own (which win) when the PEs talk over
/// shared-memory rings (the launcher lays out the rings, so a PE cannot choose them alone): 32 KiB
/// packets and blocks (the runtime's most) instead of 16 KiB, and half the ring slots, so that a
/// ring takes the same memory. A packet costs the engine the same bookkeeping and ring hand-off
/// whatever its size, so fewer packets move large transfers faster (docs/performance.md, "Larger
/// packets on shared memory"). A faulting block then pages in and resends 8 pages instead of 4.
/// Not over UDP, where a packet is a datagram that IP fragments and a lost fragment loses.
pub const SHM_RUNTIME_DEFAULTS: [&str; 3] = [
    "engine.packet_bytes=32768",
    "engine.block_bytes=32768",
    "transport.ring_slots=256",
];

/// The settings of the `shmem` section.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    /// The on-node load/store path (`shmem.loadstore`; `SHMEM_LOADSTORE` sets its default).
    pub loadstore: bool,
}

/// `defaults` with the section's assignments (`KEY=VALUE`, the `shmem.` prefix taken off)
/// applied; an unknown key or a bad value is an error naming it.
pub fn apply(defaults: Settings, sets: &[String]) -> Result<Settings, String> {
    let mut s = defaults;
    for a in sets {
        let (k, v) = a
            .split_once('=')
            .ok_or_else(|| format!("shmem.{a}: not KEY=VALUE"))?;
        match k.trim() {
            "loadstore" => {
                s.loadstore = match v.trim() {
                    "true" | "1" | "on" | "yes" => true,
                    "false" | "0" | "off" | "no" => false,
                    other => {
                        return Err(format!(
                            "shmem.loadstore={other}: not a boolean (true or false)"
                        ))
                    }
                }
            }
            other => {
                return Err(format!(
                    "shmem.{other}: unknown key (the shmem section has: shmem.loadstore)"
                ))
            }
        }
    }
    Ok(s)
}

/// The section's knobs, for `unpinned config --list` and docs/knobs.md.
pub fn knobs() -> Vec<KnobRow> {
    vec![KnobRow {
        key: "shmem.loadstore".into(),
        default: "true".into(),
        unit: "",
        doc: "OpenSHMEM: the on-node load/store path; false: every transfer through PART (as SHMEM_LOADSTORE=0)",
    }]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_section_overrides_the_default_and_refuses_unknown_keys() {
        let on = Settings { loadstore: true };
        assert_eq!(apply(on, &[]).unwrap(), on);
        assert!(!apply(on, &["loadstore=false".into()]).unwrap().loadstore);
        assert!(
            apply(Settings { loadstore: false }, &["loadstore=1".into()])
                .unwrap()
                .loadstore
        );
        assert!(apply(on, &["loadstore=maybe".into()]).is_err());
        assert!(apply(on, &["mapped=false".into()])
            .unwrap_err()
            .contains("shmem.mapped"));
    }
}
