//! HPL-like dense LU solve on a P x Q process grid (column-major rank order, P <= Q, HPL's
//! defaults), block size NB, no look-ahead. Per panel of NB columns:
//! 1. panel factorization in the owning process column: per column a pivot search, an
//!    allreduce (binary exchange) of the candidate row (`(2 NB + 4)` doubles) among the P
//!    processes of that column, and the rank-1 update of the panel;
//! 2. panel broadcast along every process row ("increasing ring"): `m_loc x NB` doubles;
//! 3. row swaps and the U broadcast in every process column ("spread-roll", HPL's long swap):
//!    the row of processes holding the pivot rows scatters `NB / P` rows to the others, then
//!    a ring allgather of those pieces;
//! 4. the trailing update (DGEMM), `2 m_loc n_loc NB` flops per process.

use serde_json::json;

use crate::collectives::{allreduce, ring_allgather, ring_bcast, scatter};
use crate::grid::dims_create;
use crate::model::AppModel;
use crate::program::Op;
use crate::rates::NodeRates;

/// The model.
#[derive(Clone, Debug)]
pub struct Hpl {
    /// Process rows.
    pub p: u32,
    /// Process columns.
    pub q: u32,
    /// Matrix order.
    pub n: u64,
    /// Block size.
    pub nb: u64,
    /// Compute rates.
    pub rates: NodeRates,
}

/// Calibrated to part.md's table at 16 nodes (matrix order and block size fix the calls and
/// bytes; HPL's problem size is chosen per machine the same way).
pub const CALIBRATED_N: u64 = 16_800;
/// Block size of the calibrated run.
pub const CALIBRATED_NB: u64 = 28;

impl Hpl {
    /// The calibrated model at `ranks` ranks (weak scaling keeps the memory per rank: N grows
    /// with the square root of the ranks).
    pub fn calibrated(ranks: u32, rates: NodeRates) -> Hpl {
        let d = dims_create(ranks, 2);
        let n = ((CALIBRATED_N as f64) * (ranks as f64 / 16.0).sqrt()).round() as u64;
        let n = (n / CALIBRATED_NB).max(1) * CALIBRATED_NB;
        Hpl {
            p: d[1],
            q: d[0],
            n,
            nb: CALIBRATED_NB,
            rates,
        }
    }

    fn rc(&self, rank: u32) -> (u32, u32) {
        (rank % self.p, rank / self.p)
    }

    fn col_group(&self, col: u32) -> Vec<u32> {
        (0..self.p).map(|r| col * self.p + r).collect()
    }

    fn row_group(&self, row: u32) -> Vec<u32> {
        (0..self.q).map(|c| c * self.p + row).collect()
    }
}

// Buffers: 0 pivot send, 1 pivot receive, 2 panel (broadcast), 3 U send piece, 4 U receive.
impl AppModel for Hpl {
    fn name(&self) -> &'static str {
        "hpl"
    }
    fn ranks(&self) -> u32 {
        self.p * self.q
    }
    fn iterations(&self) -> u64 {
        self.n.div_ceil(self.nb)
    }
    fn buffers(&self, _rank: u32) -> Vec<u64> {
        let piv = (2 * self.nb + 4) * 8;
        let m_loc = self.n.div_ceil(self.p as u64);
        let n_loc = self.n.div_ceil(self.q as u64);
        let piece = self.nb.div_ceil(self.p as u64) * n_loc * 8;
        vec![piv, piv, m_loc * self.nb * 8, piece, piece]
    }
    fn iteration(&self, rank: u32, j: u64, out: &mut Vec<Op>) {
        let (row, col) = self.rc(rank);
        let (p, q) = (self.p as u64, self.q as u64);
        let pc = (j % q) as u32;
        let pr = (j % p) as u32;
        let m = self.n - j * self.nb;
        let m_loc = m.div_ceil(p);
        let n_loc = m.saturating_sub(self.nb).div_ceil(q);
        let nb = self.nb.min(m);
        if col == pc {
            let group = self.col_group(col);
            let per_col = self.rates.dgemm_ns(2.0 * m_loc as f64 * nb as f64 / 2.0);
            for k in 0..nb {
                out.push(Op::Compute { ns: per_col });
                allreduce(
                    &group,
                    row as usize,
                    (2 * self.nb + 4) * 8,
                    0,
                    1,
                    1000 + (k as u32 & 0xff),
                    out,
                );
            }
        }
        ring_bcast(
            &self.row_group(row),
            col as usize,
            pc as usize,
            m_loc * nb * 8,
            2,
            2000,
            out,
        );
        if n_loc > 0 {
            let piece = nb.div_ceil(p) * n_loc * 8;
            let group = self.col_group(col);
            scatter(&group, row as usize, pr as usize, piece, 3, 4, 3000, out);
            ring_allgather(&group, row as usize, piece, 3, 4, 3001, out);
            out.push(Op::Compute {
                ns: self
                    .rates
                    .dgemm_ns(2.0 * m_loc as f64 * n_loc as f64 * nb as f64),
            });
        }
    }
    fn peers(&self, rank: u32) -> Vec<u32> {
        let (row, col) = self.rc(rank);
        let mut v: Vec<u32> = self
            .row_group(row)
            .into_iter()
            .chain(self.col_group(col))
            .filter(|&r| r != rank)
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }
    fn params(&self) -> serde_json::Value {
        json!({ "p": self.p, "q": self.q, "n": self.n, "nb": self.nb, "panels": self.iterations(),
            "flops": 2.0 / 3.0 * (self.n as f64).powi(3) })
    }
}
