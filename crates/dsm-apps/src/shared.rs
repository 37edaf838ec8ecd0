//! A shared allocation seen as an array of plain values.

use std::marker::PhantomData;
use std::ops::Range;

use unpinned_dsm::space::{SharedSpace, Worker};

use crate::AppError;

mod sealed {
    pub trait Sealed {}
}

/// Plain values: every bit pattern (zero included) is a valid value, no drop glue. Only
/// these may live in shared memory, which starts zeroed and is written by other processes.
pub trait Plain: Copy + Send + Sync + 'static + sealed::Sealed {}

macro_rules! plain {
    ($($t:ty),*) => { $(impl sealed::Sealed for $t {} impl Plain for $t {})* };
}
plain!(u8, u32, u64, i32, i64, f64);

/// An array of `len` plain values in shared memory (one allocation of the space).
///
/// Reads and writes go through raw pointers: other workers (threads, or processes of other
/// ranks) access the same memory, ordered by barriers and locks (the space's data-race-free
/// contract). Indices are checked: an out-of-range index panics instead of touching memory
/// outside the allocation.
pub struct Shared<T: Plain> {
    ptr: *mut T,
    len: usize,
    _t: PhantomData<T>,
}

impl<T: Plain> Clone for Shared<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T: Plain> Copy for Shared<T> {}

// SAFETY: the pointer designates shared memory that lives as long as the space; concurrent
// access is governed by the space's synchronisation (barriers, locks), as for any DSM data.
unsafe impl<T: Plain> Send for Shared<T> {}
// SAFETY: as above.
unsafe impl<T: Plain> Sync for Shared<T> {}

impl<T: Plain> Shared<T> {
    /// Collectively allocates `len` zeroed values (its own allocation, hence its own
    /// minipages).
    pub fn alloc(space: &dyn SharedSpace, len: usize) -> Result<Shared<T>, AppError> {
        let size = std::mem::size_of::<T>();
        let bytes = len
            .checked_mul(size)
            .ok_or_else(|| AppError::Space(format!("allocation of {len} values overflows")))?;
        let ptr = space.alloc(bytes.max(1), std::mem::align_of::<T>().max(8))?;
        if ptr.is_null() || (ptr as usize) % std::mem::align_of::<T>() != 0 {
            return Err(AppError::Space(
                "alloc returned a null or misaligned pointer".into(),
            ));
        }
        Ok(Shared {
            ptr: ptr.cast(),
            len,
            _t: PhantomData,
        })
    }

    /// An empty placeholder (before setup).
    pub fn empty() -> Shared<T> {
        Shared {
            ptr: std::ptr::NonNull::dangling().as_ptr(),
            len: 0,
            _t: PhantomData,
        }
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.len
    }

    /// No values.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Value `i`.
    #[inline]
    pub fn get(&self, i: usize) -> T {
        assert!(i < self.len, "shared index {i} out of range {}", self.len);
        // SAFETY: i < len, so the address is inside the allocation, aligned for T (checked at
        // alloc); T is Plain, so any bytes there are a valid T.
        unsafe { self.ptr.add(i).read() }
    }

    /// Sets value `i`.
    #[inline]
    pub fn set(&self, i: usize, v: T) {
        assert!(i < self.len, "shared index {i} out of range {}", self.len);
        // SAFETY: as in `get`; writes are ordered with other workers' accesses by the space's
        // barriers and locks (the apps are data-race free).
        unsafe { self.ptr.add(i).write(v) }
    }

    /// Announces to the space that `worker` is about to access `range` (see
    /// [`SharedSpace::access`]).
    pub fn touch(&self, space: &dyn SharedSpace, worker: Worker, range: Range<usize>, write: bool) {
        if range.start >= range.end {
            return;
        }
        assert!(
            range.end <= self.len,
            "shared range {range:?} out of range {}",
            self.len
        );
        let size = std::mem::size_of::<T>();
        space.access(
            worker,
            self.ptr.wrapping_add(range.start) as *const u8,
            (range.end - range.start) * size,
            write,
        );
    }

    /// Announces the whole array.
    pub fn touch_all(&self, space: &dyn SharedSpace, worker: Worker, write: bool) {
        self.touch(space, worker, 0..self.len, write);
    }

    /// Copies the values into a vector.
    pub fn to_vec(&self) -> Vec<T> {
        (0..self.len).map(|i| self.get(i)).collect()
    }
}
