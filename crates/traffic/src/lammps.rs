//! LAMMPS-like molecular dynamics: Lennard-Jones atoms in a 3-D domain decomposition (weak
//! scaling: a cubic sub-box of `atoms_per_rank` atoms per rank, as LAMMPS's scaled LJ
//! benchmarks replicate the box along the process grid).
//!
//! Per time step, like LAMMPS's `Comm` with `newton on`: forward communication of ghost
//! positions (6 swaps, x then y then z, each an `Irecv` + `Send` + `Wait`; a swap's slab
//! includes the ghosts of the dimensions before it), the force computation, then reverse
//! communication of ghost forces (the same swaps backwards). Every `reneigh_every` steps atoms
//! migrate (`exchange`, 6 swaps) and ghosts are rebuilt (`borders`, larger records instead of
//! the forward communication). Every `thermo_every` steps a thermodynamic allreduce.
//! A dimension with one process needs no message (LAMMPS copies locally).

use serde_json::json;

use crate::collectives::allreduce;
use crate::grid::{coords, dims_create, rank_of};
use crate::model::AppModel;
use crate::program::Op;
use crate::rates::NodeRates;

/// Reduced density of the LJ liquid (LAMMPS `bench/in.lj`).
pub const DENSITY: f64 = 0.8442;
/// Ghost cutoff: force cutoff 2.5 sigma + neighbor skin 0.3 sigma.
pub const GHOST_CUT: f64 = 2.8;
/// Bytes per atom of a forward or reverse communication (3 doubles).
pub const FWD_BYTES_PER_ATOM: f64 = 24.0;
/// Bytes per atom of a border record (x, tag, type, mask).
pub const BORDER_BYTES_PER_ATOM: f64 = 40.0;
/// Bytes per migrating atom (x, v, tag, type, mask, image).
pub const EXCHANGE_BYTES_PER_ATOM: f64 = 80.0;
/// Pair-force flops per neighbor pair (distance test + LJ force; the usual count).
pub const FLOPS_PER_PAIR: f64 = 23.0;

/// The model.
#[derive(Clone, Debug)]
pub struct Lammps {
    /// Ranks.
    pub ranks: u32,
    /// Process grid.
    pub grid: [u32; 3],
    /// Atoms owned by each rank.
    pub atoms_per_rank: f64,
    /// Time steps of the calibrated run.
    pub steps: u64,
    /// Steps between neighbor-list rebuilds (exchange + borders).
    pub reneigh_every: u64,
    /// Steps between thermodynamic output (an allreduce of 6 doubles).
    pub thermo_every: u64,
    /// Compute rates.
    pub rates: NodeRates,
}

/// Calibrated to part.md's table at 16 nodes (send calls, total MB, mean KB per send):
/// atoms per rank set the ghost slabs (the message sizes), steps the number of calls.
pub const CALIBRATED_ATOMS_PER_RANK: f64 = 2150.0;
/// Time steps of the calibrated run.
pub const CALIBRATED_STEPS: u64 = 10_675;

impl Lammps {
    /// The calibrated model at `ranks` ranks.
    pub fn calibrated(ranks: u32, rates: NodeRates) -> Lammps {
        let d = dims_create(ranks, 3);
        Lammps {
            ranks,
            grid: [d[0], d[1], d[2]],
            atoms_per_rank: CALIBRATED_ATOMS_PER_RANK,
            steps: CALIBRATED_STEPS,
            reneigh_every: 20,
            thermo_every: 100,
            rates,
        }
    }

    fn side(&self) -> f64 {
        (self.atoms_per_rank / DENSITY).cbrt()
    }

    /// Atoms in the ghost slab sent along dimension `d`.
    fn slab_atoms(&self, d: usize) -> f64 {
        let (a, rc) = (self.side(), GHOST_CUT);
        let area = match d {
            0 => a * a,
            1 => (a + 2.0 * rc) * a,
            _ => (a + 2.0 * rc) * (a + 2.0 * rc),
        };
        DENSITY * rc * area
    }

    fn neighbor(&self, rank: u32, d: usize, dir: i32) -> u32 {
        let mut c = coords(rank, &self.grid);
        let g = self.grid[d] as i32;
        c[d] = ((c[d] as i32 + dir).rem_euclid(g)) as u32;
        rank_of(&c, &self.grid)
    }

    /// 6 swaps (or fewer): in dimension order, each swap sends to one side and receives from
    /// the other.
    #[allow(clippy::too_many_arguments)]
    fn swaps(
        &self,
        rank: u32,
        bytes_per_atom: f64,
        reverse: bool,
        tag: u32,
        recv_base: u32,
        sbuf: u32,
        out: &mut Vec<Op>,
    ) {
        let mut list: Vec<(usize, i32)> = (0..3)
            .flat_map(|d| [(d, -1), (d, 1)])
            .filter(|&(d, _)| self.grid[d] > 1)
            .collect();
        if reverse {
            list.reverse();
        }
        for (d, dir) in list {
            let bytes = (self.slab_atoms(d) * bytes_per_atom).round() as u64;
            let swap = (2 * d + (dir > 0) as usize) as u32;
            out.push(Op::Recv {
                peer: self.neighbor(rank, d, -dir),
                bytes,
                buf: recv_base + swap,
                tag: tag + swap,
            });
            out.push(Op::Send {
                peer: self.neighbor(rank, d, dir),
                bytes,
                buf: sbuf,
                tag: tag + swap,
            });
            out.push(Op::Wait);
        }
    }

    fn force_ns(&self) -> u64 {
        // Half neighbor list (newton on): pairs per atom within the ghost cutoff.
        let pairs = 0.5 * DENSITY * 4.0 / 3.0 * std::f64::consts::PI * GHOST_CUT.powi(3);
        self.rates
            .md_ns(self.atoms_per_rank * (pairs * FLOPS_PER_PAIR + 18.0))
    }
}

// Buffers: 0 send, 1..=6 forward receives, 7..=12 reverse receives, 13..=18 exchange
// receives, 19..=24 border receives (separate regions of the atom arrays), 25/26 thermo.
impl AppModel for Lammps {
    fn name(&self) -> &'static str {
        "lammps"
    }
    fn ranks(&self) -> u32 {
        self.ranks
    }
    fn iterations(&self) -> u64 {
        self.steps
    }
    fn buffers(&self, _rank: u32) -> Vec<u64> {
        let big = (self.slab_atoms(2) * BORDER_BYTES_PER_ATOM).ceil() as u64;
        let mut b = vec![big];
        b.extend(
            (0..3)
                .flat_map(|d| [d, d])
                .map(|d| (self.slab_atoms(d) * FWD_BYTES_PER_ATOM).ceil() as u64),
        );
        b.extend(
            (0..3)
                .flat_map(|d| [d, d])
                .map(|d| (self.slab_atoms(d) * FWD_BYTES_PER_ATOM).ceil() as u64),
        );
        b.extend([big; 6]);
        b.extend(
            (0..3)
                .flat_map(|d| [d, d])
                .map(|d| (self.slab_atoms(d) * BORDER_BYTES_PER_ATOM).ceil() as u64),
        );
        b.extend([48, 48]);
        b
    }
    fn iteration(&self, rank: u32, step: u64, out: &mut Vec<Op>) {
        if step % self.reneigh_every == 0 {
            // Migrating atoms: those that crossed a face since the last rebuild (half the skin).
            let a = self.side();
            let per_face = DENSITY * a * a * 0.15;
            let exch_bytes_per_atom = per_face * EXCHANGE_BYTES_PER_ATOM / self.slab_atoms(0);
            self.swaps(rank, exch_bytes_per_atom, false, 300, 13, 0, out);
            self.swaps(rank, BORDER_BYTES_PER_ATOM, false, 400, 19, 0, out);
        } else {
            self.swaps(rank, FWD_BYTES_PER_ATOM, false, 100, 1, 0, out);
        }
        out.push(Op::Compute {
            ns: self.force_ns(),
        });
        self.swaps(rank, FWD_BYTES_PER_ATOM, true, 200, 7, 0, out);
        if step % self.thermo_every == 0 {
            let group: Vec<u32> = (0..self.ranks).collect();
            allreduce(&group, rank as usize, 48, 25, 26, 500, out);
        }
    }
    fn peers(&self, rank: u32) -> Vec<u32> {
        let mut ops = Vec::new();
        self.iteration(rank, 0, &mut ops);
        crate::model::peers_of(&ops)
    }
    fn params(&self) -> serde_json::Value {
        json!({ "grid": self.grid, "atoms_per_rank": self.atoms_per_rank, "steps": self.steps, "reneigh_every": self.reneigh_every,
            "thermo_every": self.thermo_every, "density": DENSITY, "ghost_cut_sigma": GHOST_CUT, "force_ns_per_step": self.force_ns() })
    }
}
