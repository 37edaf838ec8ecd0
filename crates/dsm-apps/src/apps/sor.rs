//! SOR: red-black successive over-relaxation on an n x n grid with fixed boundary, `iters`
//! iterations (TreadMarks / SPLASH style). Rows are split into contiguous bands, one per
//! worker, each band its own allocation: only the rows at band edges are shared (read by the
//! neighbour band in each half-iteration).
//!
//! Check: exact. A red-black update reads only the other colour, so every cell's value is the
//! same arithmetic, in the same order, whatever the partition; the parallel grid must equal the
//! sequential one bit for bit.

use unpinned_dsm::space::{SharedSpace, Worker};

use crate::{block, workers, App, AppError, Shared};

/// Relaxation factor.
const OMEGA: f64 = 1.25;

/// The SOR app.
pub struct Sor {
    n: usize,
    iters: usize,
    /// bands[0] = top boundary row, bands[1..=W] = worker bands, last = bottom boundary row.
    bands: Vec<Shared<f64>>,
    /// Per row: (band index, first row of that band).
    row_at: Vec<(usize, usize)>,
}

impl Sor {
    /// An `n x n` grid (boundary included), `iters` iterations.
    pub fn new(n: usize, iters: usize) -> Sor {
        Sor { n, iters, bands: Vec::new(), row_at: Vec::new() }
    }

    fn initial(n: usize, i: usize, j: usize) -> f64 {
        if i == 0 {
            1.0
        } else if i == n - 1 || j == 0 || j == n - 1 {
            0.0
        } else {
            ((i * 7 + j * 13) % 17) as f64 / 17.0
        }
    }

    /// Value at (i, j).
    fn at(&self, i: usize, j: usize) -> f64 {
        let (b, lo) = self.row_at[i];
        self.bands[b].get((i - lo) * self.n + j)
    }

    /// The sequential reference.
    fn sequential(&self) -> Vec<f64> {
        let n = self.n;
        let mut g: Vec<f64> = (0..n * n).map(|k| Sor::initial(n, k / n, k % n)).collect();
        for _ in 0..self.iters {
            for c in 0..2 {
                for i in 1..n - 1 {
                    for j in 1..n - 1 {
                        if (i + j) % 2 == c {
                            let avg = (g[(i - 1) * n + j] + g[(i + 1) * n + j] + g[i * n + j - 1] + g[i * n + j + 1]) / 4.0;
                            g[i * n + j] = (1.0 - OMEGA) * g[i * n + j] + OMEGA * avg;
                        }
                    }
                }
            }
        }
        g
    }
}

impl App for Sor {
    fn name(&self) -> &'static str {
        "sor"
    }

    fn setup(&mut self, space: &dyn SharedSpace) -> Result<(), AppError> {
        let n = self.n;
        let w = workers(space);
        if n < 3 || w > n - 2 {
            return Err(AppError::BadInput { app: "sor", why: format!("{n}x{n} grid cannot be split into {w} bands of rows") });
        }
        let mut ranges = vec![0..1];
        ranges.extend((0..w).map(|k| {
            let r = block(n - 2, w, k);
            r.start + 1..r.end + 1
        }));
        ranges.push(n - 1..n);
        self.bands.clear();
        self.row_at = vec![(0, 0); n];
        for (b, r) in ranges.iter().enumerate() {
            self.bands.push(Shared::alloc(space, r.len() * n)?);
            for i in r.clone() {
                self.row_at[i] = (b, r.start);
            }
        }
        if space.rank() == 0 {
            for i in 0..n {
                let (b, lo) = self.row_at[i];
                for j in 0..n {
                    self.bands[b].set((i - lo) * n + j, Sor::initial(n, i, j));
                }
            }
        }
        Ok(())
    }

    fn work(&self, space: &dyn SharedSpace, worker: Worker) {
        let n = self.n;
        let r = block(n - 2, worker.count, worker.id);
        let (lo, hi) = (r.start + 1, r.end + 1);
        let me = self.bands[worker.id + 1];
        for _ in 0..self.iters {
            for c in 0..2 {
                // The neighbours' edge rows (read), then our band (read and written).
                let (ab, alo) = self.row_at[lo - 1];
                self.bands[ab].touch(space, worker, (lo - 1 - alo) * n..(lo - alo) * n, false);
                let (bb, blo) = self.row_at[hi];
                self.bands[bb].touch(space, worker, (hi - blo) * n..(hi + 1 - blo) * n, false);
                me.touch_all(space, worker, true);
                for i in lo..hi {
                    for j in 1..n - 1 {
                        if (i + j) % 2 == c {
                            let avg = (self.at(i - 1, j) + self.at(i + 1, j) + self.at(i, j - 1) + self.at(i, j + 1)) / 4.0;
                            let k = (i - lo) * n + j;
                            me.set(k, (1.0 - OMEGA) * me.get(k) + OMEGA * avg);
                        }
                    }
                }
                space.barrier(worker);
            }
        }
    }

    fn check(&self, _space: &dyn SharedSpace) -> Result<(), String> {
        let seq = self.sequential();
        let n = self.n;
        for i in 0..n {
            for j in 0..n {
                let (p, s) = (self.at(i, j), seq[i * n + j]);
                if p.to_bits() != s.to_bits() {
                    return Err(format!("sor: cell ({i},{j}) = {p}, sequential {s}"));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{run_app, LocalSpace};

    #[test]
    fn check_catches_one_wrong_cell() {
        let space = LocalSpace::new(1, 2).unwrap();
        let mut app = Sor::new(16, 2);
        run_app(&mut app, &space).unwrap();
        let (b, lo) = app.row_at[5];
        app.bands[b].set((5 - lo) * 16 + 5, 0.5);
        assert!(app.check(&space).is_err());
    }
}
