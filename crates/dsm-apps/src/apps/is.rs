//! Integer Sort (the NAS IS kernel as run on page DSMs, e.g. TreadMarks): N keys in
//! [0, Bmax), `iters` rankings. Each iteration modifies two keys (as NAS does), every worker
//! counts its own keys into a private histogram and adds it into one shared bucket array under
//! a lock; after a barrier every worker reads the whole bucket array and ranks its keys.
//! Keys and ranks live in one allocation per worker (private to it); the bucket array is the
//! shared object. Two bucket arrays alternate by iteration so worker 0 can clear the next one
//! while the others still read the current one (two barriers per iteration, not three).
//!
//! Check: exact (integers): every key's final rank equals the sequential one.

use unpinned_dsm::space::{SharedSpace, Worker};

use crate::{block, workers, App, AppError, Shared};

/// The IS app.
pub struct Is {
    n: usize,
    bmax: usize,
    iters: usize,
    keys: Vec<Shared<u32>>,
    ranks: Vec<Shared<u32>>,
    buckets: [Shared<u32>; 2],
}

impl Is {
    /// `n` keys below `bmax`, `iters` iterations.
    pub fn new(n: usize, bmax: usize, iters: usize) -> Is {
        Is {
            n,
            bmax,
            iters,
            keys: Vec::new(),
            ranks: Vec::new(),
            buckets: [Shared::empty(); 2],
        }
    }

    /// NAS-like keys: the mean of four uniform numbers (a bell-shaped distribution).
    fn initial_keys(&self) -> Vec<u32> {
        let mut x: u64 = 314_159_265;
        let mut next = move || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) as f64 / (1u64 << 31) as f64
        };
        (0..self.n)
            .map(|_| {
                let s = next() + next() + next() + next();
                ((s / 4.0 * self.bmax as f64) as usize).min(self.bmax - 1) as u32
            })
            .collect()
    }

    /// The two keys iteration `it` modifies: (index, new value).
    fn modified(&self, it: usize) -> [(usize, u32); 2] {
        [
            (it, it as u32),
            (it + self.iters, (self.bmax - 1 - it) as u32),
        ]
    }

    fn sequential(&self) -> Vec<u32> {
        let mut keys = self.initial_keys();
        let mut ranks = vec![0; self.n];
        for it in 0..self.iters {
            for (i, v) in self.modified(it) {
                keys[i] = v;
            }
            let mut count = vec![0u32; self.bmax];
            for &k in &keys {
                count[k as usize] += 1;
            }
            let prefix = exclusive_prefix(&count);
            for (r, &k) in ranks.iter_mut().zip(&keys) {
                *r = prefix[k as usize];
            }
        }
        ranks
    }
}

fn exclusive_prefix(count: &[u32]) -> Vec<u32> {
    let mut acc = 0;
    count
        .iter()
        .map(|&c| {
            let p = acc;
            acc += c;
            p
        })
        .collect()
}

impl App for Is {
    fn name(&self) -> &'static str {
        "is"
    }

    fn setup(&mut self, space: &dyn SharedSpace) -> Result<(), AppError> {
        let w = workers(space);
        if self.bmax < 2 * self.iters + 1
            || self.n < 2 * self.iters
            || w > self.n
            || self.n > u32::MAX as usize
        {
            return Err(AppError::BadInput {
                app: "is",
                why: format!(
                    "{} keys below {} for {} iterations on {w} workers",
                    self.n, self.bmax, self.iters
                ),
            });
        }
        self.keys.clear();
        self.ranks.clear();
        for k in 0..w {
            let len = block(self.n, w, k).len();
            self.keys.push(Shared::alloc(space, len)?);
            self.ranks.push(Shared::alloc(space, len)?);
        }
        self.buckets = [
            Shared::alloc(space, self.bmax)?,
            Shared::alloc(space, self.bmax)?,
        ];
        if space.rank() == 0 {
            let keys = self.initial_keys();
            for k in 0..w {
                for (o, i) in block(self.n, w, k).enumerate() {
                    self.keys[k].set(o, keys[i]);
                }
            }
        }
        Ok(())
    }

    fn work(&self, space: &dyn SharedSpace, worker: Worker) {
        let mine = block(self.n, worker.count, worker.id);
        let keys = self.keys[worker.id];
        let ranks = self.ranks[worker.id];
        for it in 0..self.iters {
            let buckets = self.buckets[it % 2];
            keys.touch_all(space, worker, true);
            for (i, v) in self.modified(it) {
                if mine.contains(&i) {
                    keys.set(i - mine.start, v);
                }
            }
            let mut count = vec![0u32; self.bmax];
            for o in 0..keys.len() {
                count[keys.get(o) as usize] += 1;
            }
            space.lock(worker, 0);
            buckets.touch_all(space, worker, true);
            for (b, &c) in count.iter().enumerate() {
                if c > 0 {
                    buckets.set(b, buckets.get(b) + c);
                }
            }
            space.unlock(worker, 0);
            space.barrier(worker);
            buckets.touch_all(space, worker, false);
            let prefix = exclusive_prefix(&buckets.to_vec());
            ranks.touch_all(space, worker, true);
            for o in 0..keys.len() {
                ranks.set(o, prefix[keys.get(o) as usize]);
            }
            if worker.id == 0 {
                // Clear the other array for the next iteration: nobody reads it until the
                // barrier below.
                let next = self.buckets[(it + 1) % 2];
                next.touch_all(space, worker, true);
                for b in 0..self.bmax {
                    next.set(b, 0);
                }
            }
            space.barrier(worker);
        }
    }

    fn check(&self, space: &dyn SharedSpace) -> Result<(), String> {
        let seq = self.sequential();
        let w = workers(space);
        for k in 0..w {
            for (o, i) in block(self.n, w, k).enumerate() {
                let p = self.ranks[k].get(o);
                if p != seq[i] {
                    return Err(format!("is: rank of key {i} = {p}, sequential {}", seq[i]));
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
    fn ranks_sort_the_keys_and_check_catches_a_wrong_rank() {
        let space = LocalSpace::new(2, 2).unwrap();
        let mut app = Is::new(1000, 64, 4);
        run_app(&mut app, &space).unwrap();
        // The ranks order the keys: a key's rank is the number of smaller keys.
        let seq = app.sequential();
        let mut keys = app.initial_keys();
        for it in 0..4 {
            for (i, v) in app.modified(it) {
                keys[i] = v;
            }
        }
        for i in (0..1000).step_by(37) {
            assert_eq!(
                seq[i] as usize,
                keys.iter().filter(|&&k| k < keys[i]).count()
            );
        }
        app.ranks[1].set(3, app.ranks[1].get(3) + 1);
        assert!(app.check(&space).is_err());
    }
}
