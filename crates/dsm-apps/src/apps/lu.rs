//! LU (contiguous blocks, SPLASH-2 `lu -c`): LU factorisation without pivoting of a dense,
//! diagonally dominant n x n matrix in B x B blocks; each block is stored contiguously in its
//! own allocation and owned by one worker (2-D scatter over a pr x pc worker grid). Step k:
//! the owner of the diagonal block factors it; barrier; the owners of the perimeter blocks of
//! row and column k solve against it; barrier; the owners of the interior blocks subtract the
//! product of their perimeter blocks.
//!
//! Check: exact. Every block goes through the same operations in the same order as in the
//! sequential blocked factorisation, whichever worker owns it.

use unpinned_dsm::space::{SharedSpace, Worker};

use crate::{workers, App, AppError, Shared};

/// The LU app.
pub struct Lu {
    n: usize,
    b: usize,
    /// Blocks in row-major block order, nb x nb.
    blocks: Vec<Shared<f64>>,
    /// Worker grid rows and columns.
    grid: (usize, usize),
}

type Block = Vec<f64>;

fn factor(d: &mut Block, b: usize) {
    for p in 0..b {
        for i in p + 1..b {
            d[i * b + p] /= d[p * b + p];
            let l = d[i * b + p];
            for j in p + 1..b {
                d[i * b + j] -= l * d[p * b + j];
            }
        }
    }
}

/// A = L^-1 A (a block of row k).
fn solve_row(d: &Block, a: &mut Block, b: usize) {
    for p in 0..b {
        for i in p + 1..b {
            let l = d[i * b + p];
            for j in 0..b {
                a[i * b + j] -= l * a[p * b + j];
            }
        }
    }
}

/// A = A U^-1 (a block of column k).
fn solve_col(d: &Block, a: &mut Block, b: usize) {
    for r in 0..b {
        for p in 0..b {
            a[r * b + p] /= d[p * b + p];
            let x = a[r * b + p];
            for q in p + 1..b {
                a[r * b + q] -= x * d[p * b + q];
            }
        }
    }
}

/// C -= A B.
fn update(c: &mut Block, a: &Block, bb: &Block, b: usize) {
    for i in 0..b {
        for p in 0..b {
            let x = a[i * b + p];
            for j in 0..b {
                c[i * b + j] -= x * bb[p * b + j];
            }
        }
    }
}

impl Lu {
    /// An `n x n` matrix in `b x b` blocks (`b` divides `n`).
    pub fn new(n: usize, b: usize) -> Lu {
        Lu {
            n,
            b,
            blocks: Vec::new(),
            grid: (1, 1),
        }
    }

    fn nb(&self) -> usize {
        self.n / self.b
    }

    fn initial(&self, i: usize, j: usize) -> f64 {
        let h = (i as u64)
            .wrapping_mul(2654435761)
            .wrapping_add((j as u64).wrapping_mul(40503))
            % 1000;
        h as f64 / 1000.0 + if i == j { self.n as f64 } else { 0.0 }
    }

    fn initial_block(&self, bi: usize, bj: usize) -> Block {
        let b = self.b;
        (0..b * b)
            .map(|k| self.initial(bi * b + k / b, bj * b + k % b))
            .collect()
    }

    fn owner(&self, bi: usize, bj: usize) -> usize {
        (bi % self.grid.0) * self.grid.1 + bj % self.grid.1
    }

    fn load(&self, bi: usize, bj: usize) -> Block {
        self.blocks[bi * self.nb() + bj].to_vec()
    }

    fn store(&self, bi: usize, bj: usize, v: &Block) {
        let s = self.blocks[bi * self.nb() + bj];
        for (k, x) in v.iter().enumerate() {
            s.set(k, *x);
        }
    }

    fn sequential(&self) -> Vec<Block> {
        let nb = self.nb();
        let b = self.b;
        let mut m: Vec<Block> = (0..nb * nb)
            .map(|k| self.initial_block(k / nb, k % nb))
            .collect();
        for k in 0..nb {
            factor(&mut m[k * nb + k], b);
            let d = m[k * nb + k].clone();
            for j in k + 1..nb {
                solve_row(&d, &mut m[k * nb + j], b);
            }
            for i in k + 1..nb {
                solve_col(&d, &mut m[i * nb + k], b);
            }
            for i in k + 1..nb {
                for j in k + 1..nb {
                    let (a, bb) = (m[i * nb + k].clone(), m[k * nb + j].clone());
                    update(&mut m[i * nb + j], &a, &bb, b);
                }
            }
        }
        m
    }
}

impl App for Lu {
    fn name(&self) -> &'static str {
        "lu"
    }

    fn setup(&mut self, space: &dyn SharedSpace) -> Result<(), AppError> {
        if self.b == 0 || self.n == 0 || self.n % self.b != 0 {
            return Err(AppError::BadInput {
                app: "lu",
                why: format!("block {} does not divide n = {}", self.b, self.n),
            });
        }
        let w = workers(space);
        let pr = (1..=w)
            .filter(|d| w % d == 0 && d * d <= w)
            .max()
            .unwrap_or(1);
        self.grid = (pr, w / pr);
        let nb = self.nb();
        self.blocks = (0..nb * nb)
            .map(|_| Shared::alloc(space, self.b * self.b))
            .collect::<Result<_, _>>()?;
        if space.rank() == 0 {
            for k in 0..nb * nb {
                self.store(k / nb, k % nb, &self.initial_block(k / nb, k % nb));
            }
        }
        Ok(())
    }

    fn work(&self, space: &dyn SharedSpace, worker: Worker) {
        let nb = self.nb();
        let b = self.b;
        let me = worker.id;
        let blk = |i: usize, j: usize| self.blocks[i * nb + j];
        for k in 0..nb {
            if self.owner(k, k) == me {
                blk(k, k).touch_all(space, worker, true);
                let mut d = self.load(k, k);
                factor(&mut d, b);
                self.store(k, k, &d);
            }
            space.barrier(worker);
            let mut diag: Option<Block> = None;
            for j in k + 1..nb {
                for (i, jj, row) in [(k, j, true), (j, k, false)] {
                    if self.owner(i, jj) != me {
                        continue;
                    }
                    let d = diag.get_or_insert_with(|| {
                        blk(k, k).touch_all(space, worker, false);
                        self.load(k, k)
                    });
                    blk(i, jj).touch_all(space, worker, true);
                    let mut a = self.load(i, jj);
                    if row {
                        solve_row(d, &mut a, b);
                    } else {
                        solve_col(d, &mut a, b);
                    }
                    self.store(i, jj, &a);
                }
            }
            space.barrier(worker);
            for i in k + 1..nb {
                for j in k + 1..nb {
                    if self.owner(i, j) != me {
                        continue;
                    }
                    blk(i, k).touch_all(space, worker, false);
                    blk(k, j).touch_all(space, worker, false);
                    blk(i, j).touch_all(space, worker, true);
                    let (a, bb) = (self.load(i, k), self.load(k, j));
                    let mut c = self.load(i, j);
                    update(&mut c, &a, &bb, b);
                    self.store(i, j, &c);
                }
            }
        }
        space.barrier(worker);
    }

    fn check(&self, _space: &dyn SharedSpace) -> Result<(), String> {
        let seq = self.sequential();
        let nb = self.nb();
        for (k, s) in seq.iter().enumerate() {
            let p = self.load(k / nb, k % nb);
            if let Some(e) = (0..s.len()).find(|&e| p[e].to_bits() != s[e].to_bits()) {
                return Err(format!(
                    "lu: block ({},{}) element {e} = {}, sequential {}",
                    k / nb,
                    k % nb,
                    p[e],
                    s[e]
                ));
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
    fn check_catches_one_wrong_element_and_factors_are_right() {
        let space = LocalSpace::new(1, 4).unwrap();
        let mut app = Lu::new(32, 8);
        run_app(&mut app, &space).unwrap();
        // L U reproduces A (the sequential reference is itself checked here).
        let n = 32;
        let at = |i: usize, j: usize| app.blocks[(i / 8) * 4 + j / 8].get((i % 8) * 8 + j % 8);
        for i in 0..n {
            for j in 0..n {
                let s: f64 = (0..=i.min(j))
                    .map(|k| if k == i { 1.0 } else { at(i, k) } * at(k, j))
                    .sum();
                assert!((s - app.initial(i, j)).abs() < 1e-9, "({i},{j})");
            }
        }
        app.blocks[3].set(7, 1.0);
        assert!(app.check(&space).is_err());
    }
}
