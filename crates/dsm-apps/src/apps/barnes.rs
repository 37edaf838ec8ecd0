//! Barnes-Hut: gravitational N-body with an octree (theta = 0.5), `steps` time steps. Bodies
//! are split into contiguous blocks, one block of positions and of velocities per worker
//! (each its own allocation), as in N-Body. Each step: worker 0 builds the octree (cells with
//! their mass and centre of mass) from all positions into one shared tree object; barrier;
//! every worker computes the acceleration of its own bodies by walking the tree (read
//! sharing of the whole tree); barrier; owners move their bodies; barrier.
//!
//! Simplification (stated): SPLASH-2 Barnes builds the tree in parallel under cell locks and
//! partitions bodies by cost zones; here one worker builds it (a serial phase) and the
//! partition is by index. The sharing of the force phase (everyone reads the tree and every
//! position) is the application's.
//!
//! Check: exact. The tree is built from the positions in body order and walked in child
//! order, so every acceleration is the same sum in the same order as the sequential code.

use unpinned_dsm::space::{SharedSpace, Worker};

use crate::{block, workers, App, AppError, Shared};

const DT: f64 = 0.01;
const SOFTENING2: f64 = 0.01;
const THETA: f64 = 0.5;
/// Deeper than this, two bodies are at the same place (to 2^-48 of the box): bad input.
const DEPTH_MAX: usize = 48;
/// Values per tree cell: centre (3), half side, mass, centre of mass (3), children (8).
const CELL: usize = 16;
const EMPTY: f64 = -1.0;

/// One tree cell while building.
#[derive(Clone)]
struct Cell {
    centre: [f64; 3],
    half: f64,
    mass: f64,
    com: [f64; 3],
    /// EMPTY, a body `b` as -(b + 2), or a cell index.
    child: [f64; 8],
}

/// The octree of `pos` (3 values per body), as cells; cell 0 is the root.
fn build(pos: &[f64], m: f64) -> Vec<Cell> {
    let n = pos.len() / 3;
    let p = |b: usize| [pos[3 * b], pos[3 * b + 1], pos[3 * b + 2]];
    let (mut lo, mut hi) = ([f64::MAX; 3], [f64::MIN; 3]);
    for b in 0..n {
        for d in 0..3 {
            lo[d] = lo[d].min(p(b)[d]);
            hi[d] = hi[d].max(p(b)[d]);
        }
    }
    let half = (0..3).map(|d| hi[d] - lo[d]).fold(0.0, f64::max) / 2.0 * 1.0001 + 1e-9;
    let centre = [
        (lo[0] + hi[0]) / 2.0,
        (lo[1] + hi[1]) / 2.0,
        (lo[2] + hi[2]) / 2.0,
    ];
    let mut cells = vec![Cell {
        centre,
        half,
        mass: 0.0,
        com: [0.0; 3],
        child: [EMPTY; 8],
    }];
    let octant = |c: &Cell, x: [f64; 3]| {
        (0..3)
            .map(|d| usize::from(x[d] >= c.centre[d]) << d)
            .sum::<usize>()
    };
    for b in 0..n {
        let (mut at, mut depth) = (0, 0);
        loop {
            let k = octant(&cells[at], p(b));
            let v = cells[at].child[k];
            if v == EMPTY {
                cells[at].child[k] = -(b as f64) - 2.0;
                break;
            }
            if v >= 0.0 {
                at = v as usize;
            } else {
                // A body is there: split the slot into a cell and push that body down.
                depth += 1;
                assert!(
                    depth < DEPTH_MAX,
                    "barnes: bodies {b} and {} coincide",
                    -v as usize - 2
                );
                let parent = &cells[at];
                let h = parent.half / 2.0;
                let c: [f64; 3] = std::array::from_fn(|d| {
                    parent.centre[d] + if k >> d & 1 == 1 { h } else { -h }
                });
                let mut cell = Cell {
                    centre: c,
                    half: h,
                    mass: 0.0,
                    com: [0.0; 3],
                    child: [EMPTY; 8],
                };
                let other = -v as usize - 2;
                cell.child[octant(&cell, p(other))] = v;
                cells.push(cell);
                let idx = cells.len() - 1;
                cells[at].child[k] = idx as f64;
                at = idx;
            }
        }
    }
    // Mass and centre of mass, children before parents (children have larger indices).
    for at in (0..cells.len()).rev() {
        let (mut mass, mut com) = (0.0, [0.0; 3]);
        for k in 0..8 {
            let v = cells[at].child[k];
            let (mm, c) = if v == EMPTY {
                continue;
            } else if v >= 0.0 {
                (cells[v as usize].mass, cells[v as usize].com)
            } else {
                (m, p(-v as usize - 2))
            };
            mass += mm;
            for d in 0..3 {
                com[d] += mm * c[d];
            }
        }
        cells[at].mass = mass;
        cells[at].com = com.map(|x| x / mass);
    }
    cells
}

#[inline]
fn pull(a: [f64; 3], b: [f64; 3], m: f64) -> [f64; 3] {
    let d = [b[0] - a[0], b[1] - a[1], b[2] - a[2]];
    let r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + SOFTENING2;
    let s = m / (r2 * r2.sqrt());
    [d[0] * s, d[1] * s, d[2] * s]
}

/// Acceleration of body `b` at `x`: a walk of the tree read through `cell(i, k)`.
fn accel(
    b: usize,
    x: [f64; 3],
    m: f64,
    body: &dyn Fn(usize) -> [f64; 3],
    cell: &dyn Fn(usize, usize) -> f64,
) -> [f64; 3] {
    let mut acc = [0.0; 3];
    let mut stack = vec![0usize];
    while let Some(at) = stack.pop() {
        // Children in reverse on the stack: visited in child order 0..8.
        for k in (0..8).rev() {
            let v = cell(at, 8 + k);
            if v == EMPTY {
                continue;
            }
            if v < 0.0 {
                let o = -v as usize - 2;
                if o != b {
                    let a = pull(x, body(o), m);
                    (0..3).for_each(|d| acc[d] += a[d]);
                }
                continue;
            }
            let c = v as usize;
            let com = [cell(c, 5), cell(c, 6), cell(c, 7)];
            let d2 = (0..3).map(|d| (com[d] - x[d]).powi(2)).sum::<f64>();
            let size = 2.0 * cell(c, 3);
            if size * size < THETA * THETA * d2 {
                let a = pull(x, com, cell(c, 4));
                (0..3).for_each(|d| acc[d] += a[d]);
            } else {
                stack.push(c);
            }
        }
    }
    acc
}

/// The Barnes-Hut app.
pub struct Barnes {
    n: usize,
    steps: usize,
    pos: Vec<Shared<f64>>,
    vel: Vec<Shared<f64>>,
    /// Cells, `CELL` values each; capacity 2n + 1 cells (a body split creates at most one
    /// cell per level of coincidence, bounded by the depth guard in practice).
    tree: Shared<f64>,
    at: Vec<(usize, usize)>,
}

impl Barnes {
    /// `n` bodies, `steps` steps.
    pub fn new(n: usize, steps: usize) -> Barnes {
        Barnes {
            n,
            steps,
            pos: Vec::new(),
            vel: Vec::new(),
            tree: Shared::empty(),
            at: Vec::new(),
        }
    }

    fn mass(&self) -> f64 {
        1.0 / self.n as f64
    }

    fn initial(&self) -> Vec<f64> {
        let mut x: u64 = 173_205_080;
        (0..3 * self.n)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (x >> 11) as f64 / (1u64 << 53) as f64
            })
            .collect()
    }

    fn body(&self, b: usize) -> [f64; 3] {
        let (w, o) = self.at[b];
        let s = self.pos[w];
        [s.get(3 * o), s.get(3 * o + 1), s.get(3 * o + 2)]
    }

    fn sequential(&self) -> (Vec<f64>, Vec<f64>) {
        let n = self.n;
        let m = self.mass();
        let mut pos = self.initial();
        let mut vel = vec![0.0; 3 * n];
        for _ in 0..self.steps {
            let cells = build(&pos, m);
            let cell = |i: usize, k: usize| cell_value(&cells[i], k);
            let p = pos.clone();
            let body = |b: usize| [p[3 * b], p[3 * b + 1], p[3 * b + 2]];
            let acc: Vec<[f64; 3]> = (0..n).map(|b| accel(b, body(b), m, &body, &cell)).collect();
            for b in 0..n {
                for d in 0..3 {
                    vel[3 * b + d] += acc[b][d] * DT;
                    pos[3 * b + d] += vel[3 * b + d] * DT;
                }
            }
        }
        (pos, vel)
    }
}

/// Value `k` of a cell in the shared layout.
fn cell_value(c: &Cell, k: usize) -> f64 {
    match k {
        0..=2 => c.centre[k],
        3 => c.half,
        4 => c.mass,
        5..=7 => c.com[k - 5],
        _ => c.child[k - 8],
    }
}

impl App for Barnes {
    fn name(&self) -> &'static str {
        "barnes"
    }

    fn setup(&mut self, space: &dyn SharedSpace) -> Result<(), AppError> {
        let w = workers(space);
        if self.n < 2 || w > self.n {
            return Err(AppError::BadInput {
                app: "barnes",
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
        }
        self.tree = Shared::alloc(space, (2 * self.n + 1) * CELL)?;
        if space.rank() == 0 {
            let p = self.initial();
            for b in 0..self.n {
                let (w, o) = self.at[b];
                for d in 0..3 {
                    self.pos[w].set(3 * o + d, p[3 * b + d]);
                }
            }
        }
        Ok(())
    }

    fn work(&self, space: &dyn SharedSpace, worker: Worker) {
        let m = self.mass();
        let mine = block(self.n, worker.count, worker.id);
        for _ in 0..self.steps {
            if worker.id == 0 {
                for s in &self.pos {
                    s.touch_all(space, worker, false);
                }
                let pos: Vec<f64> = (0..self.n).flat_map(|b| self.body(b)).collect();
                let cells = build(&pos, m);
                let used = cells.len() * CELL;
                assert!(
                    used <= self.tree.len(),
                    "barnes: tree of {} cells exceeds its object",
                    cells.len()
                );
                self.tree.touch(space, worker, 0..used, true);
                for (i, c) in cells.iter().enumerate() {
                    for k in 0..CELL {
                        self.tree.set(i * CELL + k, cell_value(c, k));
                    }
                }
            }
            space.barrier(worker);
            for s in &self.pos {
                s.touch_all(space, worker, false);
            }
            // The whole tree object: a walk reaches most cells (read sharing of the tree).
            self.tree.touch_all(space, worker, false);
            let tree = self.tree;
            let cell = |i: usize, k: usize| tree.get(i * CELL + k);
            let body = |b: usize| self.body(b);
            let acc: Vec<[f64; 3]> = mine
                .clone()
                .map(|b| accel(b, self.body(b), m, &body, &cell))
                .collect();
            space.barrier(worker);
            let (pos, vel) = (self.pos[worker.id], self.vel[worker.id]);
            pos.touch_all(space, worker, true);
            vel.touch_all(space, worker, true);
            for (o, a) in acc.iter().enumerate() {
                for d in 0..3 {
                    let k = 3 * o + d;
                    vel.set(k, vel.get(k) + a[d] * DT);
                    pos.set(k, pos.get(k) + vel.get(k) * DT);
                }
            }
            space.barrier(worker);
        }
    }

    fn check(&self, _space: &dyn SharedSpace) -> Result<(), String> {
        let (pos, vel) = self.sequential();
        for b in 0..self.n {
            let (w, o) = self.at[b];
            for d in 0..3 {
                let (p, v) = (self.pos[w].get(3 * o + d), self.vel[w].get(3 * o + d));
                if p.to_bits() != pos[3 * b + d].to_bits()
                    || v.to_bits() != vel[3 * b + d].to_bits()
                {
                    return Err(format!(
                        "barnes: body {b} axis {d}: ({p}, {v}), sequential ({}, {})",
                        pos[3 * b + d],
                        vel[3 * b + d]
                    ));
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
    fn tree_forces_approach_direct_sums_and_check_catches_an_error() {
        // With theta = 0.5 the tree's acceleration is close to the direct sum.
        let n = 200;
        let app = Barnes::new(n, 1);
        let pos = app.initial();
        let m = app.mass();
        let cells = build(&pos, m);
        let total: f64 = cells[0].mass;
        assert!((total - 1.0).abs() < 1e-12);
        let body = |b: usize| [pos[3 * b], pos[3 * b + 1], pos[3 * b + 2]];
        let cell = |i: usize, k: usize| cell_value(&cells[i], k);
        for b in (0..n).step_by(17) {
            let t = accel(b, body(b), m, &body, &cell);
            let mut d = [0.0; 3];
            for o in (0..n).filter(|&o| o != b) {
                let a = pull(body(b), body(o), m);
                (0..3).for_each(|k| d[k] += a[k]);
            }
            let err = (0..3).map(|k| (t[k] - d[k]).powi(2)).sum::<f64>().sqrt();
            let mag = (0..3).map(|k| d[k].powi(2)).sum::<f64>().sqrt();
            assert!(err < 0.05 * mag + 1e-6, "body {b}: tree {t:?} direct {d:?}");
        }
        let space = LocalSpace::new(1, 3).unwrap();
        let mut app = Barnes::new(60, 2);
        run_app(&mut app, &space).unwrap();
        app.vel[1].set(0, app.vel[1].get(0) + 1e-12);
        assert!(app.check(&space).is_err());
    }
}
