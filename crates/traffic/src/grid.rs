//! Process grids (the decompositions real codes choose).

/// Balanced factorization of `n` into `d` dimensions, largest first (what `MPI_Dims_create`
/// returns): each prime factor, largest first, goes to the dimension with the smallest product.
pub fn dims_create(n: u32, d: usize) -> Vec<u32> {
    let mut primes = Vec::new();
    let (mut m, mut f) = (n.max(1), 2);
    while m > 1 {
        while m % f == 0 {
            primes.push(f);
            m /= f;
        }
        f += 1;
        if f * f > m && m > 1 {
            primes.push(m);
            break;
        }
    }
    primes.sort_unstable_by(|a, b| b.cmp(a));
    let mut dims = vec![1u32; d];
    for p in primes {
        let i = (0..d).min_by_key(|&i| dims[i]).expect("d > 0");
        dims[i] *= p;
    }
    dims.sort_unstable_by(|a, b| b.cmp(a));
    dims
}

/// Coordinates of `rank` in a grid (x fastest).
pub fn coords(rank: u32, dims: &[u32]) -> Vec<u32> {
    let mut r = rank;
    dims.iter()
        .map(|&d| {
            let c = r % d;
            r /= d;
            c
        })
        .collect()
}

/// Rank at coordinates (x fastest).
pub fn rank_of(c: &[u32], dims: &[u32]) -> u32 {
    c.iter()
        .zip(dims)
        .rev()
        .fold(0, |acc, (&c, &d)| acc * d + c)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn dims_like_mpi() {
        assert_eq!(dims_create(16, 3), vec![4, 2, 2]);
        assert_eq!(dims_create(16, 2), vec![4, 4]);
        assert_eq!(dims_create(8, 2), vec![4, 2]);
        assert_eq!(dims_create(1, 3), vec![1, 1, 1]);
        assert_eq!(dims_create(12, 3), vec![3, 2, 2]);
        assert_eq!(dims_create(4096, 3), vec![16, 16, 16]);
        for r in 0..60 {
            assert_eq!(rank_of(&coords(r, &[5, 3, 4]), &[5, 3, 4]), r);
        }
    }
}
