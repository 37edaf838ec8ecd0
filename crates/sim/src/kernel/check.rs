//! Checkers and their registry. A checker watches one concern (bytes, exactly-once,
//! protection, ...) over a world's observations of type `O` and reports what it finds; the
//! registry feeds every observation to every checker and collects the violations with the
//! checker's name and the time, so a run reports all of them instead of stopping at the first.
//!
//! A [`Vocabulary`] names a world's observation type (which may borrow from the world for the
//! time of the call): transports share [`crate::kernel::request::Requests`] (observations
//! [`crate::kernel::ReqEvent`]); a world with other concerns (DSM coherence) defines its own
//! vocabulary and checkers over it.

use unpinned_core::time::Instant;

/// What one checker found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The checker's name.
    pub checker: &'static str,
    /// Simulated time of the observation (of the run's end for final checks).
    pub at: Instant,
    /// What broke, naming the request / node / bytes concerned.
    pub what: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "[{}] t = {:.3} us: {}",
            self.checker,
            self.at.as_us_f64(),
            self.what
        )
    }
}

/// A family of observation types: `Event<'a>` is one observation, borrowing for `'a`.
pub trait Vocabulary {
    /// One observation.
    type Event<'a>;
}

/// One concern, checked over the observations of vocabulary `V`.
pub trait Checker<V: Vocabulary> {
    /// Short name, shown with each violation (`bytes`, `once`, ...).
    fn name(&self) -> &'static str;
    /// Look at one observation; push a description of each violation to `out`.
    fn observe(&mut self, at: Instant, o: &V::Event<'_>, out: &mut Vec<String>);
    /// The run ended (nothing left to happen): check what must hold at the end.
    fn finish(&mut self, _at: Instant, _out: &mut Vec<String>) {}
}

/// Violations kept per run (the count goes on beyond it).
pub const MAX_KEPT: usize = 64;

/// The registry: checkers over the observations of vocabulary `V`, and what they found.
pub struct Checkers<V: Vocabulary> {
    list: Vec<Box<dyn Checker<V>>>,
    found: Vec<Violation>,
    count: u64,
    scratch: Vec<String>,
}

impl<V: Vocabulary> Default for Checkers<V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<V: Vocabulary> Checkers<V> {
    /// No checkers yet.
    pub fn new() -> Checkers<V> {
        Checkers {
            list: Vec::new(),
            found: Vec::new(),
            count: 0,
            scratch: Vec::new(),
        }
    }

    /// Register a checker.
    pub fn add(&mut self, c: Box<dyn Checker<V>>) -> &mut Self {
        self.list.push(c);
        self
    }

    /// The registered checkers' names, in order.
    pub fn names(&self) -> Vec<&'static str> {
        self.list.iter().map(|c| c.name()).collect()
    }

    /// Feed one observation to every checker.
    pub fn observe(&mut self, at: Instant, o: &V::Event<'_>) {
        for i in 0..self.list.len() {
            self.list[i].observe(at, o, &mut self.scratch);
            self.collect(i, at);
        }
    }

    /// The run ended: every checker's final checks.
    pub fn finish(&mut self, at: Instant) {
        for i in 0..self.list.len() {
            self.list[i].finish(at, &mut self.scratch);
            self.collect(i, at);
        }
    }

    /// A violation found outside any checker (the world's own: a stuck run, a refused post),
    /// under the name `source`.
    pub fn report(&mut self, source: &'static str, at: Instant, what: String) {
        self.push(Violation {
            checker: source,
            at,
            what,
        });
    }

    /// Violations found (the first [`MAX_KEPT`]).
    pub fn violations(&self) -> &[Violation] {
        &self.found
    }

    /// How many violations were found in all (kept or not).
    pub fn count(&self) -> u64 {
        self.count
    }

    /// True when nothing was found.
    pub fn is_clean(&self) -> bool {
        self.count == 0
    }

    fn collect(&mut self, i: usize, at: Instant) {
        if self.scratch.is_empty() {
            return;
        }
        let checker = self.list[i].name();
        for what in std::mem::take(&mut self.scratch) {
            self.push(Violation { checker, at, what });
        }
    }

    fn push(&mut self, v: Violation) {
        self.count += 1;
        if self.found.len() < MAX_KEPT {
            self.found.push(v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Flags odd numbers, and at the end whether it saw fewer than three.
    struct Nums;
    impl Vocabulary for Nums {
        type Event<'a> = u32;
    }

    struct Odd(u32);
    impl Checker<Nums> for Odd {
        fn name(&self) -> &'static str {
            "odd"
        }
        fn observe(&mut self, _at: Instant, o: &u32, out: &mut Vec<String>) {
            self.0 += 1;
            if o % 2 == 1 {
                out.push(format!("{o} is odd"));
            }
        }
        fn finish(&mut self, _at: Instant, out: &mut Vec<String>) {
            if self.0 < 3 {
                out.push("too few".into());
            }
        }
    }

    #[test]
    fn collects_every_violation_with_its_checker_and_time() {
        let mut c = Checkers::<Nums>::new();
        c.add(Box::new(Odd(0)));
        c.observe(Instant(1), &2);
        assert!(c.is_clean());
        c.observe(Instant(2), &3);
        c.report("world", Instant(3), "stuck".into());
        c.finish(Instant(4));
        let v = c.violations();
        assert_eq!(c.count(), 3);
        assert_eq!(
            (v[0].checker, v[0].at, v[0].what.as_str()),
            ("odd", Instant(2), "3 is odd")
        );
        assert_eq!(v[1].checker, "world");
        assert_eq!(v[2].what, "too few");
        assert_eq!(c.names(), ["odd"]);
    }
}
