//! HPCG-like preconditioned conjugate gradient on a 27-point stencil: a local `n^3` grid per
//! rank, a 3-D process grid with non-periodic boundaries (up to 26 neighbours), a 4-level
//! multigrid V-cycle preconditioner. Per CG iteration, like the reference HPCG: one SpMV
//! (halo exchange), the V-cycle (per level above the coarsest: pre-smoothing SYMGS, residual
//! SpMV, post-smoothing SYMGS, each with a halo exchange; one SYMGS at the coarsest), and
//! three dot products (allreduce of one double). A halo exchange posts every receive, sends
//! one message per neighbour (a face, edge or corner of the level's grid, 8 bytes per point)
//! and waits for all.

use serde_json::json;

use crate::collectives::allreduce;
use crate::grid::{coords, dims_create, rank_of};
use crate::model::AppModel;
use crate::program::Op;
use crate::rates::NodeRates;

/// Multigrid levels (HPCG's default).
pub const LEVELS: u32 = 4;
/// Bytes streamed per row by one SpMV: 27 nonzeros of (8-byte value + 4-byte index) plus
/// three vector entries.
pub const SPMV_BYTES_PER_ROW: f64 = 27.0 * 12.0 + 3.0 * 8.0;

/// The model.
#[derive(Clone, Debug)]
pub struct Hpcg {
    /// Ranks.
    pub ranks: u32,
    /// Process grid.
    pub grid: [u32; 3],
    /// Local grid points per dimension (level 0).
    pub n: u32,
    /// CG iterations of the calibrated run.
    pub iterations: u64,
    /// Compute rates.
    pub rates: NodeRates,
}

/// Calibrated to part.md's table at 16 nodes: the local grid sets the message sizes, the
/// iterations the number of calls.
pub const CALIBRATED_N: u32 = 136;
/// CG iterations of the calibrated run.
pub const CALIBRATED_ITERATIONS: u64 = 151;

impl Hpcg {
    /// The calibrated model at `ranks` ranks (weak scaling: the local grid is fixed).
    pub fn calibrated(ranks: u32, rates: NodeRates) -> Hpcg {
        let d = dims_create(ranks, 3);
        Hpcg {
            ranks,
            grid: [d[0], d[1], d[2]],
            n: CALIBRATED_N,
            iterations: CALIBRATED_ITERATIONS,
            rates,
        }
    }

    /// Neighbour directions that exist for `rank`, with their rank.
    fn neighbours(&self, rank: u32) -> Vec<([i32; 3], u32)> {
        let c = coords(rank, &self.grid);
        let mut v = Vec::new();
        for dz in -1..=1 {
            for dy in -1..=1 {
                for dx in -1..=1 {
                    let d = [dx, dy, dz];
                    if d == [0, 0, 0] {
                        continue;
                    }
                    let nc: Option<Vec<u32>> = (0..3)
                        .map(|i| {
                            let x = c[i] as i32 + d[i];
                            (x >= 0 && x < self.grid[i] as i32).then_some(x as u32)
                        })
                        .collect();
                    if let Some(nc) = nc {
                        v.push((d, rank_of(&nc, &self.grid)));
                    }
                }
            }
        }
        v
    }

    fn level_n(&self, level: u32) -> u64 {
        (self.n as u64 >> level).max(1)
    }

    fn halo(&self, rank: u32, level: u32, out: &mut Vec<Op>) {
        let n = self.level_n(level);
        let nb = self.neighbours(rank);
        let size = |d: [i32; 3]| {
            d.iter()
                .map(|&x| if x == 0 { n } else { 1 })
                .product::<u64>()
                * 8
        };
        for (i, &(d, peer)) in nb.iter().enumerate() {
            // The receive lands in the level's external part, one region per neighbour.
            let _ = i;
            out.push(Op::Recv {
                peer,
                bytes: size(d),
                buf: self.recv_buf(level, d),
                tag: 10 + level,
            });
        }
        for &(d, peer) in &nb {
            out.push(Op::Send {
                peer,
                bytes: size(d),
                buf: level,
                tag: 10 + level,
            });
        }
        out.push(Op::Wait);
    }

    /// Buffer of the receive from the neighbour in direction `d` at `level` (after the
    /// LEVELS send buffers and the two allreduce buffers).
    fn recv_buf(&self, level: u32, d: [i32; 3]) -> u32 {
        let di = ((d[2] + 1) * 9 + (d[1] + 1) * 3 + (d[0] + 1)) as u32;
        LEVELS + 2 + level * 27 + di
    }

    fn spmv_ns(&self, level: u32) -> u64 {
        self.rates
            .stream_ns(self.level_n(level).pow(3) as f64 * SPMV_BYTES_PER_ROW)
    }

    fn mg(&self, rank: u32, level: u32, out: &mut Vec<Op>) {
        // SYMGS is a forward and a backward sweep: twice an SpMV's traffic.
        self.halo(rank, level, out);
        out.push(Op::Compute {
            ns: 2 * self.spmv_ns(level),
        });
        if level + 1 < LEVELS {
            self.halo(rank, level, out);
            out.push(Op::Compute {
                ns: self.spmv_ns(level),
            });
            self.mg(rank, level + 1, out);
            self.halo(rank, level, out);
            out.push(Op::Compute {
                ns: 2 * self.spmv_ns(level),
            });
        }
    }
}

impl AppModel for Hpcg {
    fn name(&self) -> &'static str {
        "hpcg"
    }
    fn ranks(&self) -> u32 {
        self.ranks
    }
    fn iterations(&self) -> u64 {
        self.iterations
    }
    fn buffers(&self, _rank: u32) -> Vec<u64> {
        let mut b: Vec<u64> = (0..LEVELS)
            .map(|l| {
                let n = self.level_n(l);
                26 * n * n * 8
            })
            .collect();
        b.extend([8, 8]);
        for l in 0..LEVELS {
            let n = self.level_n(l);
            for di in 0..27 {
                let d = [di % 3 - 1, (di / 3) % 3 - 1, di / 9 - 1];
                b.push(
                    d.iter()
                        .map(|&x: &i32| if x == 0 { n } else { 1 })
                        .product::<u64>()
                        * 8,
                );
            }
        }
        b
    }
    fn iteration(&self, rank: u32, _it: u64, out: &mut Vec<Op>) {
        let group: Vec<u32> = (0..self.ranks).collect();
        let rows = self.level_n(0).pow(3) as f64;
        // SpMV of the search direction, then two dot products and the vector updates.
        self.halo(rank, 0, out);
        out.push(Op::Compute {
            ns: self.spmv_ns(0),
        });
        out.push(Op::Compute {
            ns: self.rates.stream_ns(rows * 16.0),
        });
        allreduce(&group, rank as usize, 8, LEVELS, LEVELS + 1, 50, out);
        out.push(Op::Compute {
            ns: self.rates.stream_ns(rows * 48.0),
        });
        self.mg(rank, 0, out);
        out.push(Op::Compute {
            ns: self.rates.stream_ns(rows * 16.0),
        });
        allreduce(&group, rank as usize, 8, LEVELS, LEVELS + 1, 51, out);
        out.push(Op::Compute {
            ns: self.rates.stream_ns(rows * 16.0),
        });
        allreduce(&group, rank as usize, 8, LEVELS, LEVELS + 1, 52, out);
        out.push(Op::Compute {
            ns: self.rates.stream_ns(rows * 24.0),
        });
    }
    fn peers(&self, rank: u32) -> Vec<u32> {
        let mut ops = Vec::new();
        self.iteration(rank, 0, &mut ops);
        crate::model::peers_of(&ops)
    }
    fn params(&self) -> serde_json::Value {
        json!({ "grid": self.grid, "local_n": self.n, "levels": LEVELS, "iterations": self.iterations, "spmv_bytes_per_row": SPMV_BYTES_PER_ROW })
    }
}
