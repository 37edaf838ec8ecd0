//! N-Body and N-Body-Write: direct O(n^2) gravitation (softened), `steps` time steps, bodies
//! split into contiguous blocks, one block of positions, velocities and accelerations per
//! worker (each its own allocation).
//!
//! - **N-Body** (read sharing): each worker reads every position and computes the acceleration
//!   of its own bodies; barrier; it moves its bodies; barrier. Check: exact, since body i's
//!   acceleration is summed over j = 0..n in the same order as the sequential code.
//! - **N-Body-Write** (write sharing): each pair is computed once (j > i, Newton's third law)
//!   and the worker adds the contributions into the acceleration blocks of the bodies' owners,
//!   each block under its owner's lock; barrier; owners move their bodies and clear the block.
//!   The order in which contributions reach a block depends on timing, so the check uses a
//!   tolerance: reassociating a sum of at most n terms changes it by at most n * eps * sum|terms|
//!   (eps = 1.1e-16); with masses 1/n and softening s^2 = 0.01 a term is at most
//!   (1/n) * 2 / (3 sqrt(3) s^2) ~ 38.5/n, so sum|terms| <= 38.5 and the acceleration error is
//!   below 8192 * 1.1e-16 * 38.5 < 1e-10, which
//!   after dt = 0.01 steps moves positions by far less than the 1e-9 allowed, while a lost or
//!   doubled contribution (>= 1e-7 in position after one step) exceeds it.

use unpinned_dsm::space::{SharedSpace, Worker};

use crate::{block, workers, App, AppError, Shared};

const DT: f64 = 0.01;
const SOFTENING2: f64 = 0.01;
/// Allowed absolute difference of positions and velocities for N-Body-Write (see module doc).
const WRITE_TOLERANCE: f64 = 1e-9;

/// The N-Body app (both variants).
pub struct NBody {
    n: usize,
    steps: usize,
    write: bool,
    pos: Vec<Shared<f64>>,
    vel: Vec<Shared<f64>>,
    acc: Vec<Shared<f64>>,
    /// Per body: (block, offset).
    at: Vec<(usize, usize)>,
}

fn initial(n: usize) -> Vec<f64> {
    let mut x: u64 = 161_803_398;
    (0..3 * n)
        .map(|_| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 11) as f64 / (1u64 << 53) as f64
        })
        .collect()
}

/// Acceleration on a body at `a` from one of mass `m` at `b`.
#[inline]
fn pull(a: [f64; 3], b: [f64; 3], m: f64) -> [f64; 3] {
    let d = [b[0] - a[0], b[1] - a[1], b[2] - a[2]];
    let r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + SOFTENING2;
    let s = m / (r2 * r2.sqrt());
    [d[0] * s, d[1] * s, d[2] * s]
}

impl NBody {
    /// `n` bodies, `steps` steps; `write` selects N-Body-Write.
    pub fn new(n: usize, steps: usize, write: bool) -> NBody {
        NBody {
            n,
            steps,
            write,
            pos: Vec::new(),
            vel: Vec::new(),
            acc: Vec::new(),
            at: Vec::new(),
        }
    }

    fn mass(&self) -> f64 {
        1.0 / self.n as f64
    }

    fn p(&self, i: usize) -> [f64; 3] {
        let (b, o) = self.at[i];
        let s = self.pos[b];
        [s.get(3 * o), s.get(3 * o + 1), s.get(3 * o + 2)]
    }

    /// Sequential reference: (positions, velocities) after `steps`, each acceleration summed
    /// over j in order.
    fn sequential(&self) -> (Vec<f64>, Vec<f64>) {
        let n = self.n;
        let m = self.mass();
        let mut pos = initial(n);
        let mut vel = vec![0.0; 3 * n];
        let get = |p: &Vec<f64>, i: usize| [p[3 * i], p[3 * i + 1], p[3 * i + 2]];
        for _ in 0..self.steps {
            let mut acc = vec![0.0; 3 * n];
            for i in 0..n {
                for j in 0..n {
                    if i != j {
                        let a = pull(get(&pos, i), get(&pos, j), m);
                        for d in 0..3 {
                            acc[3 * i + d] += a[d];
                        }
                    }
                }
            }
            for k in 0..3 * n {
                vel[k] += acc[k] * DT;
                pos[k] += vel[k] * DT;
            }
        }
        (pos, vel)
    }
}

impl App for NBody {
    fn name(&self) -> &'static str {
        if self.write {
            "nbody-write"
        } else {
            "nbody"
        }
    }

    fn setup(&mut self, space: &dyn SharedSpace) -> Result<(), AppError> {
        let w = workers(space);
        if w > self.n {
            return Err(AppError::BadInput {
                app: self.name(),
                why: format!("{} bodies for {w} workers", self.n),
            });
        }
        self.at = vec![(0, 0); self.n];
        for k in 0..w {
            let r = block(self.n, w, k);
            for (o, i) in r.clone().enumerate() {
                self.at[i] = (k, o);
            }
            self.pos.push(Shared::alloc(space, 3 * r.len())?);
            self.vel.push(Shared::alloc(space, 3 * r.len())?);
            if self.write {
                self.acc.push(Shared::alloc(space, 3 * r.len())?);
            }
        }
        if space.rank() == 0 {
            let p = initial(self.n);
            for i in 0..self.n {
                let (b, o) = self.at[i];
                for d in 0..3 {
                    self.pos[b].set(3 * o + d, p[3 * i + d]);
                }
            }
        }
        Ok(())
    }

    fn work(&self, space: &dyn SharedSpace, worker: Worker) {
        let n = self.n;
        let m = self.mass();
        let mine = block(n, worker.count, worker.id);
        let (pos, vel) = (self.pos[worker.id], self.vel[worker.id]);
        for _ in 0..self.steps {
            for b in &self.pos {
                b.touch_all(space, worker, false);
            }
            let acc: Vec<f64> = if self.write {
                // Every pair (i mine, j > i) once; contributions to all n bodies.
                let mut part = vec![0.0; 3 * n];
                for i in mine.clone() {
                    let pi = self.p(i);
                    for j in i + 1..n {
                        let a = pull(pi, self.p(j), m);
                        for d in 0..3 {
                            part[3 * i + d] += a[d];
                            part[3 * j + d] -= a[d];
                        }
                    }
                }
                for k in worker.id..worker.count {
                    let r = block(n, worker.count, k);
                    if part[3 * r.start..3 * r.end].iter().all(|x| *x == 0.0) {
                        continue;
                    }
                    let dst = self.acc[k];
                    space.lock(worker, k as u32);
                    dst.touch_all(space, worker, true);
                    for (o, i) in r.enumerate() {
                        for d in 0..3 {
                            dst.set(3 * o + d, dst.get(3 * o + d) + part[3 * i + d]);
                        }
                    }
                    space.unlock(worker, k as u32);
                }
                space.barrier(worker);
                let own = self.acc[worker.id];
                own.touch_all(space, worker, true);
                let v = own.to_vec();
                for k in 0..own.len() {
                    own.set(k, 0.0);
                }
                v
            } else {
                let mut acc = vec![0.0; 3 * mine.len()];
                for (o, i) in mine.clone().enumerate() {
                    let pi = self.p(i);
                    for j in 0..n {
                        if i != j {
                            let a = pull(pi, self.p(j), m);
                            for d in 0..3 {
                                acc[3 * o + d] += a[d];
                            }
                        }
                    }
                }
                space.barrier(worker);
                acc
            };
            pos.touch_all(space, worker, true);
            vel.touch_all(space, worker, true);
            for (k, a) in acc.iter().enumerate() {
                vel.set(k, vel.get(k) + a * DT);
                pos.set(k, pos.get(k) + vel.get(k) * DT);
            }
            space.barrier(worker);
        }
    }

    fn check(&self, _space: &dyn SharedSpace) -> Result<(), String> {
        let (pos, vel) = self.sequential();
        for i in 0..self.n {
            let (b, o) = self.at[i];
            for d in 0..3 {
                for (what, got, want) in [
                    ("position", self.pos[b].get(3 * o + d), pos[3 * i + d]),
                    ("velocity", self.vel[b].get(3 * o + d), vel[3 * i + d]),
                ] {
                    let ok = if self.write {
                        (got - want).abs() <= WRITE_TOLERANCE
                    } else {
                        got.to_bits() == want.to_bits()
                    };
                    if !ok {
                        return Err(format!(
                            "{}: {what} {d} of body {i} = {got}, sequential {want}",
                            self.name()
                        ));
                    }
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
    fn check_catches_a_small_error_in_both_variants() {
        for write in [false, true] {
            let space = LocalSpace::new(1, 4).unwrap();
            let mut app = NBody::new(40, 2, write);
            run_app(&mut app, &space).unwrap();
            app.pos[2].set(1, app.pos[2].get(1) + 1e-8);
            assert!(app.check(&space).is_err(), "write = {write}");
        }
    }
}
