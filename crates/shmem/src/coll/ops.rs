//! The reduction operators: integer ones wrap (as C's unsigned arithmetic does, and as the
//! other implementations do for signed types), floating-point ones follow IEEE, complex
//! numbers are `[re, im]` pairs with C's layout.

/// Sum, product, maximum and minimum.
pub trait Arith: Copy {
    fn sum(self, o: Self) -> Self;
    fn prod(self, o: Self) -> Self;
}

/// Maximum and minimum.
pub trait Order: Copy {
    fn max(self, o: Self) -> Self;
    fn min(self, o: Self) -> Self;
}

/// Bitwise and, or, xor.
pub trait Bits: Copy {
    fn and(self, o: Self) -> Self;
    fn or(self, o: Self) -> Self;
    fn xor(self, o: Self) -> Self;
}

macro_rules! int_ops {
    ($($t:ty)*) => {$(
        impl Arith for $t {
            fn sum(self, o: Self) -> Self { self.wrapping_add(o) }
            fn prod(self, o: Self) -> Self { self.wrapping_mul(o) }
        }
        impl Order for $t {
            fn max(self, o: Self) -> Self { Ord::max(self, o) }
            fn min(self, o: Self) -> Self { Ord::min(self, o) }
        }
        impl Bits for $t {
            fn and(self, o: Self) -> Self { self & o }
            fn or(self, o: Self) -> Self { self | o }
            fn xor(self, o: Self) -> Self { self ^ o }
        }
    )*};
}
int_ops!(i8 i16 i32 i64 isize u8 u16 u32 u64 usize);

macro_rules! float_ops {
    ($($t:ty)*) => {$(
        impl Arith for $t {
            fn sum(self, o: Self) -> Self { self + o }
            fn prod(self, o: Self) -> Self { self * o }
        }
        impl Order for $t {
            fn max(self, o: Self) -> Self { if o > self { o } else { self } }
            fn min(self, o: Self) -> Self { if o < self { o } else { self } }
        }
    )*};
}
float_ops!(f32 f64);

/// `float _Complex`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct C32(pub [f32; 2]);
/// `double _Complex`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct C64(pub [f64; 2]);

macro_rules! complex_ops {
    ($($t:ident)*) => {$(
        impl Arith for $t {
            fn sum(self, o: Self) -> Self { $t([self.0[0] + o.0[0], self.0[1] + o.0[1]]) }
            fn prod(self, o: Self) -> Self {
                let ([a, b], [c, d]) = (self.0, o.0);
                $t([a * c - b * d, a * d + b * c])
            }
        }
    )*};
}
complex_ops!(C32 C64);

pub fn sum<T: Arith>(a: T, b: T) -> T {
    a.sum(b)
}
pub fn prod<T: Arith>(a: T, b: T) -> T {
    a.prod(b)
}
pub fn max<T: Order>(a: T, b: T) -> T {
    a.max(b)
}
pub fn min<T: Order>(a: T, b: T) -> T {
    a.min(b)
}
pub fn and<T: Bits>(a: T, b: T) -> T {
    a.and(b)
}
pub fn or<T: Bits>(a: T, b: T) -> T {
    a.or(b)
}
pub fn xor<T: Bits>(a: T, b: T) -> T {
    a.xor(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn complex_product_and_wrapping_integers() {
        assert_eq!(prod(C64([1.0, 2.0]), C64([3.0, -1.0])), C64([5.0, 5.0]));
        assert_eq!(sum(i8::MAX, 1), i8::MIN);
        assert_eq!(max(-3i32, 2), 2);
        assert_eq!(min(f64::NAN, 1.0).to_bits(), f64::NAN.to_bits());
        assert_eq!(xor(0b1100u8, 0b1010), 0b0110);
    }
}
