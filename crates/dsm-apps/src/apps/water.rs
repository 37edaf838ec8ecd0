//! Water (n-squared): the structure of SPLASH-2 Water-nsquared, molecules split into
//! contiguous blocks per worker (positions, velocities and forces of a block in its own
//! allocations). Each time step every worker computes the pairs of its molecules with the
//! next n/2 molecules (the half shell, so each pair once and the load balanced), accumulates
//! the forces privately, then adds them into the force blocks of every owner under that
//! owner's lock (starting with its own block and wrapping around, as SPLASH staggers the
//! updates); barrier; owners move their molecules and clear their forces; barrier.
//!
//! Simplification (stated, not hidden): a molecule is one Lennard-Jones site in a periodic box
//! (reduced units, density 0.8, cutoff 2.5 sigma) instead of SPLASH's three-site water model
//! with intra-molecular forces; the sharing pattern (reads of all positions, lock-protected
//! writes into other owners' forces, two barriers per step) is the application's.
//!
//! Check: tolerance. Contributions reach a force block in a timing-dependent order. Changing the
//! order of a sum of at most n terms changes it by at most n * eps * sum|terms|: with n = 512,
//! eps = 1.1e-16 and at most ~50 neighbours within the cutoff, each below 1e3 at the closest
//! distances of a density-0.8 lattice, that is < 3e-9 in force, times dt = 0.002 per step for
//! velocity (and dt^2 for position): the 1e-9 allowed on positions and velocities is far above
//! it and far below the effect of a lost contribution.

use unpinned_dsm::space::{SharedSpace, Worker};

use crate::{block, workers, App, AppError, Shared};

const DT: f64 = 0.002;
const DENSITY: f64 = 0.8;
const CUTOFF: f64 = 2.5;
/// Allowed absolute difference of positions (modulo the box) and velocities.
const TOLERANCE: f64 = 1e-9;

/// The Water app.
pub struct Water {
    n: usize,
    steps: usize,
    pos: Vec<Shared<f64>>,
    vel: Vec<Shared<f64>>,
    force: Vec<Shared<f64>>,
    at: Vec<(usize, usize)>,
}

impl Water {
    /// `n` molecules, `steps` time steps.
    pub fn new(n: usize, steps: usize) -> Water {
        Water {
            n,
            steps,
            pos: Vec::new(),
            vel: Vec::new(),
            force: Vec::new(),
            at: Vec::new(),
        }
    }

    fn side(&self) -> f64 {
        (self.n as f64 / DENSITY).cbrt()
    }

    fn cutoff(&self) -> f64 {
        CUTOFF.min(self.side() / 2.0)
    }

    /// A perturbed cubic lattice.
    fn initial(&self) -> Vec<f64> {
        let m = (self.n as f64).cbrt().ceil() as usize;
        let a = self.side() / m as f64;
        let mut x: u64 = 141_421_356;
        (0..self.n)
            .flat_map(|i| [i % m, (i / m) % m, i / (m * m)])
            .map(|c| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let jitter = ((x >> 11) as f64 / (1u64 << 53) as f64 - 0.5) * 0.1;
                (c as f64 + 0.5 + jitter) * a
            })
            .collect()
    }

    /// Force on the molecule at `a` from the one at `b` (minimum image, cut off).
    fn force_on(&self, a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
        let l = self.side();
        let mut d = [0.0; 3];
        for k in 0..3 {
            let x = a[k] - b[k];
            d[k] = x - l * (x / l).round();
        }
        let r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
        let rc = self.cutoff();
        if r2 >= rc * rc {
            return [0.0; 3];
        }
        let inv6 = 1.0 / (r2 * r2 * r2);
        let s = 24.0 * inv6 * (2.0 * inv6 - 1.0) / r2;
        [d[0] * s, d[1] * s, d[2] * s]
    }

    /// The half-shell partners of molecule i: each pair of molecules exactly once overall.
    fn partners(n: usize, i: usize) -> impl Iterator<Item = usize> {
        let half = n / 2;
        (1..=half)
            .filter(move |&k| !(n % 2 == 0 && k == half && i >= half))
            .map(move |k| (i + k) % n)
    }

    fn p(&self, i: usize) -> [f64; 3] {
        let (b, o) = self.at[i];
        let s = self.pos[b];
        [s.get(3 * o), s.get(3 * o + 1), s.get(3 * o + 2)]
    }

    fn advance(&self, x: f64, v: f64) -> f64 {
        (x + v * DT).rem_euclid(self.side())
    }

    fn sequential(&self) -> (Vec<f64>, Vec<f64>) {
        let n = self.n;
        let mut pos = self.initial();
        let mut vel = vec![0.0; 3 * n];
        let get = |p: &Vec<f64>, i: usize| [p[3 * i], p[3 * i + 1], p[3 * i + 2]];
        for _ in 0..self.steps {
            let mut f = vec![0.0; 3 * n];
            for i in 0..n {
                for j in 0..n {
                    if i != j {
                        let a = self.force_on(get(&pos, i), get(&pos, j));
                        for d in 0..3 {
                            f[3 * i + d] += a[d];
                        }
                    }
                }
            }
            for k in 0..3 * n {
                vel[k] += f[k] * DT;
                pos[k] = self.advance(pos[k], vel[k]);
            }
        }
        (pos, vel)
    }
}

impl App for Water {
    fn name(&self) -> &'static str {
        "water"
    }

    fn setup(&mut self, space: &dyn SharedSpace) -> Result<(), AppError> {
        let w = workers(space);
        if self.n < 2 || w > self.n {
            return Err(AppError::BadInput {
                app: "water",
                why: format!("{} molecules for {w} workers", self.n),
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
            self.force.push(Shared::alloc(space, 3 * r.len())?);
        }
        if space.rank() == 0 {
            let p = self.initial();
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
        let mine = block(n, worker.count, worker.id);
        for _ in 0..self.steps {
            for b in &self.pos {
                b.touch_all(space, worker, false);
            }
            let mut part = vec![0.0; 3 * n];
            for i in mine.clone() {
                let pi = self.p(i);
                for j in Water::partners(n, i) {
                    let f = self.force_on(pi, self.p(j));
                    for d in 0..3 {
                        part[3 * i + d] += f[d];
                        part[3 * j + d] -= f[d];
                    }
                }
            }
            for s in 0..worker.count {
                let k = (worker.id + s) % worker.count;
                let r = block(n, worker.count, k);
                if part[3 * r.start..3 * r.end].iter().all(|x| *x == 0.0) {
                    continue;
                }
                let dst = self.force[k];
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
            let (pos, vel, force) = (
                self.pos[worker.id],
                self.vel[worker.id],
                self.force[worker.id],
            );
            pos.touch_all(space, worker, true);
            vel.touch_all(space, worker, true);
            force.touch_all(space, worker, true);
            for k in 0..pos.len() {
                vel.set(k, vel.get(k) + force.get(k) * DT);
                pos.set(k, self.advance(pos.get(k), vel.get(k)));
                force.set(k, 0.0);
            }
            space.barrier(worker);
        }
    }

    fn check(&self, _space: &dyn SharedSpace) -> Result<(), String> {
        let (pos, vel) = self.sequential();
        let l = self.side();
        for i in 0..self.n {
            let (b, o) = self.at[i];
            for d in 0..3 {
                let dp = (self.pos[b].get(3 * o + d) - pos[3 * i + d]).abs();
                let dp = dp.min(l - dp);
                let dv = (self.vel[b].get(3 * o + d) - vel[3 * i + d]).abs();
                if !(dp <= TOLERANCE && dv <= TOLERANCE) {
                    return Err(format!("water: molecule {i} axis {d}: position off by {dp:e}, velocity by {dv:e} (allowed {TOLERANCE:e})"));
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
    fn half_shell_covers_each_pair_once_and_check_catches_a_lost_contribution() {
        for n in [5, 6, 9, 10] {
            let mut seen = vec![0; n * n];
            for i in 0..n {
                for j in Water::partners(n, i) {
                    seen[i.min(j) * n + i.max(j)] += 1;
                }
            }
            for i in 0..n {
                for j in i + 1..n {
                    assert_eq!(seen[i * n + j], 1, "pair ({i},{j}) of {n}");
                }
            }
        }
        let space = LocalSpace::new(2, 2).unwrap();
        let mut app = Water::new(27, 2);
        run_app(&mut app, &space).unwrap();
        app.vel[0].set(0, app.vel[0].get(0) + 1e-7);
        assert!(app.check(&space).is_err());
    }
}
