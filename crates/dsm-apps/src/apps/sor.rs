//! SOR: red-black successive over-relaxation on an n x n grid with fixed boundary, `iters`
//! iterations (TreadMarks style). The red and the black cells are two arrays, so a
//! half-iteration writes one colour and reads only the other; rows are split into contiguous
//! bands, one per worker, each band of each colour its own allocation. Only the rows at band
//! edges are shared: read by the neighbour band in each half-iteration, with no false sharing
//! (a minipage is written by its owner in one phase and read by others in the next).
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
    /// Per colour: bands[c][0] = top boundary row, [1..=W] = worker bands, last = bottom row.
    bands: [Vec<Shared<f64>>; 2],
    /// Per row: (band index, first row of that band).
    row_at: Vec<(usize, usize)>,
}

impl Sor {
    /// An `n x n` grid (boundary included), `iters` iterations.
    pub fn new(n: usize, iters: usize) -> Sor {
        Sor {
            n,
            iters,
            bands: [Vec::new(), Vec::new()],
            row_at: Vec::new(),
        }
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

    /// Cells of one colour in a row.
    fn half(&self) -> usize {
        self.n.div_ceil(2)
    }

    /// (colour array, index) of cell (i, j).
    fn slot(&self, i: usize, j: usize) -> (Shared<f64>, usize) {
        let (b, lo) = self.row_at[i];
        (self.bands[(i + j) % 2][b], (i - lo) * self.half() + j / 2)
    }

    /// Value at (i, j).
    fn at(&self, i: usize, j: usize) -> f64 {
        let (s, k) = self.slot(i, j);
        s.get(k)
    }

    /// Sets (i, j).
    fn set(&self, i: usize, j: usize, v: f64) {
        let (s, k) = self.slot(i, j);
        s.set(k, v);
    }

    /// Announces row `i` of colour `c`.
    fn touch_row(&self, space: &dyn SharedSpace, worker: Worker, c: usize, i: usize, write: bool) {
        let (b, lo) = self.row_at[i];
        let h = self.half();
        self.bands[c][b].touch(space, worker, (i - lo) * h..(i - lo + 1) * h, write);
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
                            let avg = (g[(i - 1) * n + j]
                                + g[(i + 1) * n + j]
                                + g[i * n + j - 1]
                                + g[i * n + j + 1])
                                / 4.0;
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
            return Err(AppError::BadInput {
                app: "sor",
                why: format!("{n}x{n} grid cannot be split into {w} bands of rows"),
            });
        }
        let bands = (0..w).map(|k| {
            let r = block(n - 2, w, k);
            r.start + 1..r.end + 1
        });
        let ranges: Vec<_> = std::iter::once(0..1)
            .chain(bands)
            .chain(std::iter::once(n - 1..n))
            .collect();
        self.bands = [Vec::new(), Vec::new()];
        self.row_at = vec![(0, 0); n];
        for (b, r) in ranges.iter().enumerate() {
            for c in 0..2 {
                self.bands[c].push(Shared::alloc(space, r.len() * self.half())?);
            }
            for i in r.clone() {
                self.row_at[i] = (b, r.start);
            }
        }
        if space.rank() == 0 {
            for i in 0..n {
                for j in 0..n {
                    self.set(i, j, Sor::initial(n, i, j));
                }
            }
        }
        Ok(())
    }

    fn work(&self, space: &dyn SharedSpace, worker: Worker) {
        let n = self.n;
        let r = block(n - 2, worker.count, worker.id);
        let (lo, hi) = (r.start + 1, r.end + 1);
        for _ in 0..self.iters {
            for c in 0..2 {
                // Colour c is written from the other colour: the neighbours' edge rows and our
                // own band of it (read), our band of colour c (written).
                let other = 1 - c;
                self.touch_row(space, worker, other, lo - 1, false);
                self.touch_row(space, worker, other, hi, false);
                self.bands[other][worker.id + 1].touch_all(space, worker, false);
                self.bands[c][worker.id + 1].touch_all(space, worker, true);
                for i in lo..hi {
                    for j in 1..n - 1 {
                        if (i + j) % 2 == c {
                            let avg = (self.at(i - 1, j)
                                + self.at(i + 1, j)
                                + self.at(i, j - 1)
                                + self.at(i, j + 1))
                                / 4.0;
                            self.set(i, j, (1.0 - OMEGA) * self.at(i, j) + OMEGA * avg);
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
        app.set(5, 5, 0.5);
        assert!(app.check(&space).is_err());
    }
}
