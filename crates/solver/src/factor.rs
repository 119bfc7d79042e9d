//! Divisors of 64-bit integers: trial division by small primes, then a deterministic
//! Miller–Rabin test and Pollard's rho (Brent) for what is left. Used to decide exactly whether
//! a size is a product `p*q` of two factors within ranges (a reshape of patches into tokens,
//! `n == (h//16)*(w//16)`: the values of `n` some `h`, `w` give), which no periodic set holds.

/// `a * b mod m` without overflow.
fn mul_mod(a: u64, b: u64, m: u64) -> u64 {
    ((a as u128 * b as u128) % m as u128) as u64
}

fn pow_mod(mut a: u64, mut e: u64, m: u64) -> u64 {
    let mut r = 1 % m;
    a %= m;
    while e > 0 {
        if e & 1 == 1 {
            r = mul_mod(r, a, m);
        }
        a = mul_mod(a, a, m);
        e >>= 1;
    }
    r
}

/// Whether `n` is prime: deterministic for every 64-bit `n` (the first 12 primes as bases).
pub fn is_prime(n: u64) -> bool {
    const BASES: [u64; 12] = [2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37];
    if n < 2 {
        return false;
    }
    for p in BASES {
        if n % p == 0 {
            return n == p;
        }
    }
    let (mut d, mut s) = (n - 1, 0);
    while d % 2 == 0 {
        d /= 2;
        s += 1;
    }
    'bases: for a in BASES {
        let mut x = pow_mod(a, d, n);
        if x == 1 || x == n - 1 {
            continue;
        }
        for _ in 1..s {
            x = mul_mod(x, x, n);
            if x == n - 1 {
                continue 'bases;
            }
        }
        return false;
    }
    true
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// A nontrivial factor of the odd composite `n` (Pollard's rho, Brent's variant).
fn rho(n: u64) -> u64 {
    for c in 1u64.. {
        let f = |x: u64| (mul_mod(x, x, n) + c) % n;
        let (mut x, mut y, mut d) = (2u64, 2u64, 1u64);
        while d == 1 {
            x = f(x);
            y = f(f(y));
            d = gcd(x.abs_diff(y), n);
        }
        if d != n {
            return d;
        }
    }
    unreachable!("some constant finds a factor")
}

/// The prime factors of `n >= 1`, with multiplicity, in increasing order.
pub fn factor(n: u64) -> Vec<u64> {
    let mut out = Vec::new();
    let mut n = n;
    for p in [2u64, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37] {
        while n % p == 0 {
            out.push(p);
            n /= p;
        }
    }
    let mut stack = vec![n];
    while let Some(m) = stack.pop() {
        if m == 1 {
            continue;
        }
        if is_prime(m) {
            out.push(m);
            continue;
        }
        let d = rho(m);
        stack.push(d);
        stack.push(m / d);
    }
    out.sort_unstable();
    out
}

/// Every divisor of `n >= 1`, in increasing order.
pub fn divisors(n: u64) -> Vec<u64> {
    let mut out = vec![1u64];
    let f = factor(n);
    let mut i = 0;
    while i < f.len() {
        let p = f[i];
        let mut k = 0;
        while i < f.len() && f[i] == p {
            k += 1;
            i += 1;
        }
        let base = out.clone();
        let mut pk = 1u64;
        for _ in 0..k {
            pk *= p;
            out.extend(base.iter().map(|d| d * pk));
        }
    }
    out.sort_unstable();
    out
}

/// Whether `n = p*q` for some `p` in `ps` and `q` in `qs` (inclusive ranges of nonnegative
/// integers), decided exactly from `n`'s divisors.
pub fn is_product(n: i128, ps: (i128, i128), qs: (i128, i128)) -> bool {
    let (Ok(m), true) = (u64::try_from(n), ps.0 >= 0 && qs.0 >= 0) else {
        return false;
    };
    if m == 0 {
        return (ps.0 == 0 && ps.1 >= 0) || (qs.0 == 0 && qs.1 >= 0);
    }
    divisors(m).into_iter().any(|p| {
        let (p, q) = (p as i128, (m / p) as i128);
        (ps.0..=ps.1).contains(&p) && (qs.0..=qs.1).contains(&q)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn divisors_match_trial_division() {
        for n in 1u64..3000 {
            let want: Vec<u64> = (1..=n).filter(|d| n % d == 0).collect();
            assert_eq!(divisors(n), want, "{n}");
            assert_eq!(is_prime(n), want.len() == 2, "{n}");
        }
        // Large: a prime near 2^63 and products of two large primes.
        let p = 9_223_372_036_854_775_783u64; // the largest prime below 2^63
        assert!(is_prime(p));
        let (a, b) = (3_037_000_493u64, 3_037_000_453u64);
        assert!(is_prime(a) && is_prime(b));
        assert_eq!(factor(a * b), vec![b, a]);
        assert_eq!(divisors(a * b), vec![1, b, a, a * b]);
    }

    #[test]
    fn products_within_ranges_match_brute_force() {
        for (ps, qs) in [
            ((2, 9), (2, 9)),
            ((0, 5), (3, 7)),
            ((3, 40), (1, 2)),
            ((2, 1000), (2, 1000)),
        ] {
            for n in 0i128..400 {
                let want = (ps.0..=ps.1).any(|p: i128| (qs.0..=qs.1).any(|q: i128| p * q == n));
                assert_eq!(is_product(n, ps, qs), want, "{n} {ps:?} {qs:?}");
            }
        }
    }
}
