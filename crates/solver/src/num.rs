//! Exact integer and rational arithmetic with Python semantics.
//!
//! PyTorch guards use Python's *floor* division and *floor* modulo: `-7 // 2 == -4` and
//! `-7 % 2 == 1`. Rust's `/` and `%` truncate, so every division in dimguard goes through the
//! helpers here. All operations are checked: an overflow is an [`ArithError::Overflow`], never a
//! wrapped value and never a panic.

use num_integer::Integer;
use num_rational::Ratio;
use num_traits::{CheckedAdd, CheckedDiv, CheckedMul, CheckedSub, Signed, Zero};

/// An exact rational number. Integers are rationals with denominator 1.
pub type Q = Ratio<i128>;

/// Failure of an exact arithmetic operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ArithError {
    /// A result does not fit in 128 bits.
    #[error("arithmetic overflow (a value exceeds 128 bits)")]
    Overflow,
    /// Division or modulo by zero.
    #[error("division by zero")]
    DivisionByZero,
}

/// Result of an exact arithmetic operation.
pub type ArithResult<T> = Result<T, ArithError>;

/// An integer as a rational.
pub fn q(n: i128) -> Q {
    Q::from_integer(n)
}

/// `a + b`, checked.
pub fn add(a: &Q, b: &Q) -> ArithResult<Q> {
    // Integers are the common case: skip the gcd work of the general path.
    if *a.denom() == 1 && *b.denom() == 1 {
        return i128::checked_add(*a.numer(), *b.numer())
            .map(q)
            .ok_or(ArithError::Overflow);
    }
    a.checked_add(b).ok_or(ArithError::Overflow)
}

/// `a - b`, checked.
pub fn sub(a: &Q, b: &Q) -> ArithResult<Q> {
    if *a.denom() == 1 && *b.denom() == 1 {
        return i128::checked_sub(*a.numer(), *b.numer())
            .map(q)
            .ok_or(ArithError::Overflow);
    }
    a.checked_sub(b).ok_or(ArithError::Overflow)
}

/// `a * b`, checked.
pub fn mul(a: &Q, b: &Q) -> ArithResult<Q> {
    if *a.denom() == 1 && *b.denom() == 1 {
        return i128::checked_mul(*a.numer(), *b.numer())
            .map(q)
            .ok_or(ArithError::Overflow);
    }
    a.checked_mul(b).ok_or(ArithError::Overflow)
}

/// `a / b` (true division), checked.
pub fn div(a: &Q, b: &Q) -> ArithResult<Q> {
    if b.is_zero() {
        return Err(ArithError::DivisionByZero);
    }
    a.checked_div(b).ok_or(ArithError::Overflow)
}

/// `-a`, checked (`-i128::MIN` overflows).
pub fn neg(a: &Q) -> ArithResult<Q> {
    let n = a.numer().checked_neg().ok_or(ArithError::Overflow)?;
    Ok(Q::new_raw(n, *a.denom()))
}

/// The largest integer `<= a`.
pub fn floor(a: &Q) -> i128 {
    a.numer().div_floor(a.denom())
}

/// The smallest integer `>= a`.
pub fn ceil(a: &Q) -> i128 {
    // -floor(-a) without negating (which could overflow): ceil(n/d) for d > 0.
    let (qt, r) = a.numer().div_mod_floor(a.denom());
    if r.is_zero() {
        qt
    } else {
        qt + 1
    }
}

/// Rounds toward zero (`math.trunc`, `int()`).
pub fn trunc(a: &Q) -> i128 {
    if a.is_negative() {
        ceil(a)
    } else {
        floor(a)
    }
}

/// Python's `round()`: to nearest, ties to even.
pub fn round_half_even(a: &Q) -> i128 {
    let f = floor(a);
    let frac = a - q(f);
    let half = Q::new(1, 2);
    match frac.cmp(&half) {
        std::cmp::Ordering::Less => f,
        std::cmp::Ordering::Greater => f + 1,
        std::cmp::Ordering::Equal => {
            if f.rem_euclid(2) == 0 {
                f
            } else {
                f + 1
            }
        }
    }
}

/// Python `a // b` on rationals: `floor(a / b)`.
pub fn floordiv(a: &Q, b: &Q) -> ArithResult<Q> {
    Ok(q(floor(&div(a, b)?)))
}

/// Python `a % b` on rationals: `a - b * floor(a / b)`; the result has the sign of `b`.
pub fn pymod(a: &Q, b: &Q) -> ArithResult<Q> {
    let fq = floordiv(a, b)?;
    sub(a, &mul(b, &fq)?)
}

/// Python `a // b` on integers.
pub fn int_floordiv(a: i128, b: i128) -> ArithResult<i128> {
    if b == 0 {
        return Err(ArithError::DivisionByZero);
    }
    if a == i128::MIN && b == -1 {
        return Err(ArithError::Overflow);
    }
    Ok(Integer::div_floor(&a, &b))
}

/// Python `a % b` on integers (result has the sign of `b`).
pub fn int_mod(a: i128, b: i128) -> ArithResult<i128> {
    if b == 0 {
        return Err(ArithError::DivisionByZero);
    }
    if b == -1 {
        return Ok(0);
    }
    Ok(a.mod_floor(&b))
}

/// `ceil(a / b)` for integers with `b > 0`.
pub fn int_ceildiv(a: i128, b: i128) -> i128 {
    debug_assert!(b > 0);
    let (qt, r) = a.div_mod_floor(&b);
    if r == 0 {
        qt
    } else {
        qt + 1
    }
}

/// Least common multiple, checked.
pub fn lcm(a: i128, b: i128) -> ArithResult<i128> {
    let g = a.gcd(&b);
    if g == 0 {
        return Ok(0);
    }
    (a / g)
        .checked_mul(b)
        .map(|v| v.abs())
        .ok_or(ArithError::Overflow)
}

/// `base ** exp` for a non-negative integer exponent, checked.
pub fn pow(base: &Q, exp: u32) -> ArithResult<Q> {
    let mut acc = q(1);
    for _ in 0..exp {
        acc = mul(&acc, base)?;
    }
    Ok(acc)
}

/// The exact value of a Python float literal such as `0.5` or `1e-05`.
///
/// Python parses a float literal to the nearest IEEE-754 double; this returns that double's exact
/// rational value (`0.5` is exactly 1/2, `0.1` is 3602879701896397/2^55). `None` when the literal
/// is not finite or its exact value does not fit.
pub fn float_literal(text: &str) -> Option<Q> {
    let v: f64 = text.parse().ok()?;
    f64_exact(v)
}

/// The exact rational value of a finite double.
pub fn f64_exact(v: f64) -> Option<Q> {
    if !v.is_finite() {
        return None;
    }
    if v == 0.0 {
        return Some(q(0));
    }
    let bits = v.to_bits();
    let sign: i128 = if bits >> 63 == 1 { -1 } else { 1 };
    let exp_bits = ((bits >> 52) & 0x7ff) as i32;
    let frac = (bits & ((1u64 << 52) - 1)) as i128;
    let (mant, exp) = if exp_bits == 0 {
        (frac, -1074)
    } else {
        (frac | (1i128 << 52), exp_bits - 1075)
    };
    if exp >= 0 {
        if exp > 70 {
            return None;
        }
        Some(q(sign * (mant << exp)))
    } else {
        let shift = -exp;
        // Reduce common powers of two first so that 2^shift fits in i128.
        let tz = mant.trailing_zeros().min(shift as u32) as i32;
        let (m, s) = (mant >> tz, shift - tz);
        if s > 125 {
            return None;
        }
        Some(Q::new(sign * m, 1i128 << s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn python_floor_semantics() {
        assert_eq!(int_floordiv(-7, 2), Ok(-4));
        assert_eq!(int_mod(-7, 2), Ok(1));
        assert_eq!(int_mod(7, -2), Ok(-1));
        assert_eq!(int_floordiv(7, -2), Ok(-4));
        assert_eq!(int_mod(5, 0), Err(ArithError::DivisionByZero));
        assert_eq!(int_floordiv(i128::MIN, -1), Err(ArithError::Overflow));
        assert_eq!(round_half_even(&Q::new(5, 2)), 2);
        assert_eq!(round_half_even(&Q::new(7, 2)), 4);
        assert_eq!(round_half_even(&Q::new(-5, 2)), -2);
        assert_eq!(trunc(&Q::new(-7, 2)), -3);
        assert_eq!(ceil(&Q::new(-7, 2)), -3);
        assert_eq!(floor(&Q::new(-7, 2)), -4);
    }

    #[test]
    fn float_literals_are_exact_doubles() {
        assert_eq!(float_literal("0.5"), Some(Q::new(1, 2)));
        assert_eq!(float_literal("2.0"), Some(q(2)));
        assert_eq!(
            float_literal("0.1"),
            Some(Q::new(3602879701896397, 1 << 55))
        );
        assert_eq!(float_literal("1e-05").map(|v| v > q(0)), Some(true));
        assert_eq!(float_literal("inf"), None);
    }

    #[test]
    fn overflow_is_an_error() {
        let big = q(i128::MAX);
        assert_eq!(add(&big, &q(1)), Err(ArithError::Overflow));
        assert_eq!(mul(&big, &q(2)), Err(ArithError::Overflow));
        assert_eq!(neg(&q(i128::MIN)), Err(ArithError::Overflow));
    }

    proptest! {
        #[test]
        fn floordiv_mod_identity(a in -1_000_000i128..1_000_000, b in -1000i128..1000) {
            prop_assume!(b != 0);
            let d = int_floordiv(a, b).unwrap();
            let m = int_mod(a, b).unwrap();
            prop_assert_eq!(d * b + m, a);
            let in_range = if b > 0 { (0..b).contains(&m) } else { (b + 1..=0).contains(&m) };
            prop_assert!(in_range);
            prop_assert_eq!(floordiv(&q(a), &q(b)).unwrap(), q(d));
            prop_assert_eq!(pymod(&q(a), &q(b)).unwrap(), q(m));
        }

        #[test]
        fn f64_exact_roundtrips(v in any::<f64>()) {
            if let Some(r) = f64_exact(v) {
                let back = (*r.numer() as f64) / (*r.denom() as f64);
                prop_assert_eq!(back, v);
            }
        }
    }
}
