//! Seeded random numbers for the detection corpus, written here so that the
//! corpus is fixed by its seed alone: SplitMix64 expands seeds, xoshiro256**
//! draws, Box–Muller turns uniforms into normals, and Student's t with 3
//! degrees of freedom is a normal over `sqrt(chi2_3 / 3)`.

/// One SplitMix64 step over `state`.
pub(crate) fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A seed derived from `seed` and a path of labels (series, run, stream):
/// every label goes through a SplitMix64 step, so nearby labels give
/// unrelated seeds.
pub(crate) fn derive(seed: u64, parts: &[u64]) -> u64 {
    let mut h = seed;
    for &p in parts {
        let mut s = h ^ p.wrapping_mul(0xD6E8_FEB8_6659_FD93);
        h = splitmix(&mut s);
    }
    h
}

/// xoshiro256** with a cached second Box–Muller normal.
#[derive(Debug, Clone)]
pub(crate) struct Rng {
    s: [u64; 4],
    spare: Option<f64>,
}

impl Rng {
    /// A generator whose state is four SplitMix64 outputs of `seed`.
    pub(crate) fn new(seed: u64) -> Self {
        let mut st = seed;
        let s = [
            splitmix(&mut st),
            splitmix(&mut st),
            splitmix(&mut st),
            splitmix(&mut st),
        ];
        Rng { s, spare: None }
    }

    /// The next 64 bits.
    pub(crate) fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// Uniform in [0, 1), 53 bits.
    pub(crate) fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// A uniform index below `n` (n > 0).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }

    /// A standard normal (Box–Muller; the second value of a pair is kept).
    pub(crate) fn normal(&mut self) -> f64 {
        if let Some(z) = self.spare.take() {
            return z;
        }
        // 1 - u lies in (0, 1], so the logarithm is finite.
        let u1 = 1.0 - self.uniform();
        let u2 = self.uniform();
        let r = (-2.0 * u1.ln()).sqrt();
        let theta = std::f64::consts::TAU * u2;
        self.spare = Some(r * theta.sin());
        r * theta.cos()
    }

    /// Student's t with 3 degrees of freedom (variance 3).
    pub(crate) fn student_t3(&mut self) -> f64 {
        let z = self.normal();
        let chi2: f64 = (0..3).map(|_| self.normal().powi(2)).sum();
        z / (chi2 / 3.0).sqrt()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moments_are_about_right() {
        let mut r = Rng::new(7);
        let n = 200_000;
        let (mut s, mut s2) = (0.0, 0.0);
        for _ in 0..n {
            let z = r.normal();
            s += z;
            s2 += z * z;
        }
        let mean = s / n as f64;
        assert!(mean.abs() < 0.01, "{mean}");
        assert!((s2 / n as f64 - 1.0).abs() < 0.02);
        let t: Vec<f64> = (0..n).map(|_| r.student_t3()).collect();
        let inside = t.iter().filter(|v| v.abs() < 3.182).count() as f64 / n as f64;
        assert!((inside - 0.95).abs() < 0.005, "{inside}");
    }
}
