//! TSP: branch and bound for the shortest tour of n cities (integer distances), with a shared
//! work queue under a lock (TreadMarks TSP style). Setup expands the search tree from city 0
//! to a fixed depth into the queue (one record per partial tour, the queue array read-only
//! afterwards); the queue head is its own small object (lock 0); the best tour so far is
//! another (lock 1). A worker pops a partial tour under lock 0, reads the bound under lock 1,
//! and searches the subtree depth-first; a better complete tour is published under lock 1.
//!
//! Check: exact. The best length equals the sequential branch and bound's optimum, and the
//! published tour visits every city once and has that length. (Which of several optimal tours
//! wins depends on timing, so the tour itself is not compared.)

use unpinned_dsm::space::{SharedSpace, Worker};

use crate::{App, AppError, Shared};

/// Lock of the queue head.
const QUEUE_LOCK: u32 = 0;
/// Lock of the best tour.
const BEST_LOCK: u32 = 1;
/// Levels of the tree expanded into the queue.
const QUEUE_DEPTH: usize = 3;

/// The TSP app.
pub struct Tsp {
    n: usize,
    dist: Vec<u32>,
    /// Per city, its shortest edge (for the lower bound).
    min_edge: Vec<u32>,
    /// Records of `n + 2` values: [prefix length, prefix cost, cities...].
    queue: Shared<u32>,
    queue_len: usize,
    /// [next record].
    head: Shared<u32>,
    /// [best cost, cities...].
    best: Shared<u32>,
}

impl Tsp {
    /// `n` cities at deterministic pseudo-random positions.
    pub fn new(n: usize) -> Tsp {
        let mut x: u64 = 271_828_183;
        let mut next = move || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((x >> 33) % 1000) as f64
        };
        let pts: Vec<(f64, f64)> = (0..n).map(|_| (next(), next())).collect();
        let dist: Vec<u32> = (0..n * n)
            .map(|k| {
                let (a, b) = (pts[k / n], pts[k % n]);
                ((a.0 - b.0).hypot(a.1 - b.1)).round() as u32
            })
            .collect();
        let min_edge = (0..n)
            .map(|i| {
                (0..n)
                    .filter(|&j| j != i)
                    .map(|j| dist[i * n + j])
                    .min()
                    .unwrap_or(0)
            })
            .collect();
        Tsp {
            n,
            dist,
            min_edge,
            queue: Shared::empty(),
            queue_len: 0,
            head: Shared::empty(),
            best: Shared::empty(),
        }
    }

    fn rec(&self) -> usize {
        self.n + 2
    }

    /// Partial tours from city 0 with `depth` more cities, in lexicographic order.
    fn prefixes(&self) -> Vec<Vec<usize>> {
        let depth = QUEUE_DEPTH.min(self.n - 1);
        let mut out = vec![vec![0]];
        for _ in 0..depth {
            let mut next = Vec::new();
            for p in out {
                for c in (1..self.n).filter(|c| !p.contains(c)) {
                    next.push([p.clone(), vec![c]].concat());
                }
            }
            out = next;
        }
        out
    }

    fn cost(&self, path: &[usize]) -> u32 {
        path.windows(2)
            .map(|w| self.dist[w[0] * self.n + w[1]])
            .sum()
    }

    /// Depth-first search below `path` (cost `cost`); improves `best` in place. Returns
    /// whether it did.
    fn search(
        &self,
        path: &mut Vec<usize>,
        visited: &mut [bool],
        cost: u32,
        best: &mut (u32, Vec<usize>),
    ) -> bool {
        let n = self.n;
        let cur = *path.last().expect("paths start at city 0");
        if path.len() == n {
            let total = cost + self.dist[cur * n];
            if total < best.0 {
                *best = (total, path.clone());
                return true;
            }
            return false;
        }
        let lb = cost
            + self.min_edge[cur]
            + (0..n)
                .filter(|&c| !visited[c])
                .map(|c| self.min_edge[c])
                .sum::<u32>();
        if lb >= best.0 {
            return false;
        }
        let mut improved = false;
        for c in 1..n {
            if !visited[c] {
                visited[c] = true;
                path.push(c);
                improved |= self.search(path, visited, cost + self.dist[cur * n + c], best);
                path.pop();
                visited[c] = false;
            }
        }
        improved
    }

    fn sequential(&self) -> u32 {
        let mut best = (u32::MAX, Vec::new());
        let mut visited = vec![false; self.n];
        visited[0] = true;
        self.search(&mut vec![0], &mut visited, 0, &mut best);
        best.0
    }
}

impl App for Tsp {
    fn name(&self) -> &'static str {
        "tsp"
    }

    fn setup(&mut self, space: &dyn SharedSpace) -> Result<(), AppError> {
        if !(3..=24).contains(&self.n) {
            return Err(AppError::BadInput {
                app: "tsp",
                why: format!("{} cities (3..=24)", self.n),
            });
        }
        let prefixes = self.prefixes();
        self.queue_len = prefixes.len();
        self.queue = Shared::alloc(space, self.queue_len * self.rec())?;
        self.head = Shared::alloc(space, 1)?;
        self.best = Shared::alloc(space, self.n + 1)?;
        if space.rank() == 0 {
            for (r, p) in prefixes.iter().enumerate() {
                let base = r * self.rec();
                self.queue.set(base, p.len() as u32);
                self.queue.set(base + 1, self.cost(p));
                for (k, &c) in p.iter().enumerate() {
                    self.queue.set(base + 2 + k, c as u32);
                }
            }
            self.best.set(0, u32::MAX);
        }
        Ok(())
    }

    fn work(&self, space: &dyn SharedSpace, worker: Worker) {
        let n = self.n;
        loop {
            space.lock(worker, QUEUE_LOCK);
            self.head.touch_all(space, worker, true);
            let h = self.head.get(0) as usize;
            if h < self.queue_len {
                self.head.set(0, h as u32 + 1);
            }
            space.unlock(worker, QUEUE_LOCK);
            if h >= self.queue_len {
                break;
            }
            let base = h * self.rec();
            self.queue
                .touch(space, worker, base..base + self.rec(), false);
            let len = self.queue.get(base) as usize;
            let cost = self.queue.get(base + 1);
            let mut path: Vec<usize> = (0..len)
                .map(|k| self.queue.get(base + 2 + k) as usize)
                .collect();
            let mut visited = vec![false; n];
            for &c in &path {
                visited[c] = true;
            }
            space.lock(worker, BEST_LOCK);
            self.best.touch(space, worker, 0..1, false);
            let mut best = (self.best.get(0), Vec::new());
            space.unlock(worker, BEST_LOCK);
            if self.search(&mut path, &mut visited, cost, &mut best) {
                space.lock(worker, BEST_LOCK);
                self.best.touch_all(space, worker, true);
                if best.0 < self.best.get(0) {
                    self.best.set(0, best.0);
                    for (k, &c) in best.1.iter().enumerate() {
                        self.best.set(1 + k, c as u32);
                    }
                }
                space.unlock(worker, BEST_LOCK);
            }
        }
        space.barrier(worker);
    }

    fn check(&self, _space: &dyn SharedSpace) -> Result<(), String> {
        let seq = self.sequential();
        let got = self.best.get(0);
        if got != seq {
            return Err(format!("tsp: best tour {got}, sequential optimum {seq}"));
        }
        let tour: Vec<usize> = (0..self.n).map(|k| self.best.get(1 + k) as usize).collect();
        let mut seen = vec![false; self.n];
        for &c in &tour {
            if c >= self.n || seen[c] {
                return Err(format!("tsp: published tour {tour:?} is not a permutation"));
            }
            seen[c] = true;
        }
        let len = self.cost(&tour) + self.dist[tour[self.n - 1] * self.n + tour[0]];
        if len != got {
            return Err(format!(
                "tsp: published tour has length {len}, best says {got}"
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{run_app, LocalSpace};

    #[test]
    fn optimum_matches_brute_force_and_check_catches_a_worse_tour() {
        let space = LocalSpace::new(1, 3).unwrap();
        let mut app = Tsp::new(7);
        run_app(&mut app, &space).unwrap();
        // Brute force over all permutations of cities 1..7.
        fn perms(rest: Vec<usize>, acc: &mut Vec<usize>, f: &mut dyn FnMut(&[usize])) {
            if rest.is_empty() {
                return f(acc);
            }
            for k in 0..rest.len() {
                let mut r = rest.clone();
                acc.push(r.remove(k));
                perms(r, acc, f);
                acc.pop();
            }
        }
        let mut best = u32::MAX;
        perms((1..7).collect(), &mut vec![0], &mut |p| {
            best = best.min(app.cost(p) + app.dist[p[6] * 7])
        });
        assert_eq!(app.best.get(0), best);
        app.best.set(0, best + 1);
        assert!(app.check(&space).is_err());
    }
}
