//! Small statistics over repeated measurements: median, spread, and the Mann-Whitney U test
//! used to decide whether two sets of repetitions differ.
//!
//! The Mann-Whitney test follows scipy.stats.mannwhitneyu (two-sided, `method="auto"`): the
//! exact distribution when one sample has at most 8 values and there are no ties, otherwise the
//! normal approximation with tie and continuity corrections. (Beyond 64 values in the larger
//! sample the approximation is used regardless, to bound the exact table's size.)

/// The median of `values`; `NaN` when empty.
pub fn median(values: &[f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    if v.len() % 2 == 1 {
        v[mid]
    } else {
        (v[mid - 1] + v[mid]) / 2.0
    }
}

/// The arithmetic mean; `NaN` when empty.
pub(crate) fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

/// The sample standard deviation (n - 1 in the denominator); 0 for fewer than two values.
pub(crate) fn std_dev(values: &[f64]) -> f64 {
    if values.len() < 2 {
        return 0.0;
    }
    let m = mean(values);
    let ss: f64 = values.iter().map(|x| (x - m) * (x - m)).sum();
    (ss / (values.len() - 1) as f64).sqrt()
}

/// Coefficient of variation in percent (sample standard deviation / mean x 100); 0 when the
/// mean is 0 or there are fewer than two values.
pub(crate) fn cv_percent(values: &[f64]) -> f64 {
    let m = mean(values);
    if values.len() < 2 || m == 0.0 || !m.is_finite() {
        return 0.0;
    }
    std_dev(values) / m.abs() * 100.0
}

/// Smallest and largest value; `(NaN, NaN)` when empty.
pub(crate) fn min_max(values: &[f64]) -> (f64, f64) {
    values.iter().fold((f64::NAN, f64::NAN), |(lo, hi), &x| {
        (
            if lo.is_nan() { x } else { lo.min(x) },
            if hi.is_nan() { x } else { hi.max(x) },
        )
    })
}

/// A mean with its two-sided 95% confidence interval (Student's t over the values' spread).
#[derive(
    Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
pub(crate) struct Interval {
    pub mean: f64,
    pub low: f64,
    pub high: f64,
    /// Values it is the mean of.
    pub n: usize,
}

impl Interval {
    /// The interval of the mean of `values`; `None` with fewer than two (no spread to go by).
    pub(crate) fn of_mean(values: &[f64]) -> Option<Interval> {
        if values.len() < 2 {
            return None;
        }
        let n = values.len();
        let se = std_dev(values) / (n as f64).sqrt();
        Some(Interval::around(mean(values), se, n - 1, n))
    }

    /// An estimate with standard error `se` on `df` degrees of freedom, from `n` values.
    fn around(mean: f64, se: f64, df: usize, n: usize) -> Interval {
        let half = t_975(df) * se;
        Interval {
            mean,
            low: mean - half,
            high: mean + half,
            n,
        }
    }

    /// Every figure multiplied by `k` (> 0): the interval of a quantity proportional to it.
    pub(crate) fn scaled(self, k: f64) -> Interval {
        Interval {
            mean: self.mean * k,
            low: self.low * k,
            high: self.high * k,
            n: self.n,
        }
    }
}

/// A least-squares line through points (x, y), each of its figures with a 95% interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Fit {
    pub slope: Interval,
    pub intercept: Interval,
    /// Residual standard deviation, mean x and the x spread (sum of squared deviations).
    s: f64,
    x_mean: f64,
    sxx: f64,
}

impl Fit {
    /// The line through `points`; `None` with fewer than three points or a single x (no
    /// slope, or no spread about it, to go by).
    pub(crate) fn of(points: &[(f64, f64)]) -> Option<Fit> {
        let n = points.len();
        if n < 3 {
            return None;
        }
        let x_mean = mean(&points.iter().map(|p| p.0).collect::<Vec<_>>());
        let y_mean = mean(&points.iter().map(|p| p.1).collect::<Vec<_>>());
        let sxx: f64 = points.iter().map(|p| (p.0 - x_mean).powi(2)).sum();
        if sxx <= 0.0 {
            return None;
        }
        let sxy: f64 = points.iter().map(|p| (p.0 - x_mean) * (p.1 - y_mean)).sum();
        let slope = sxy / sxx;
        let intercept = y_mean - slope * x_mean;
        let sse: f64 = points
            .iter()
            .map(|p| (p.1 - intercept - slope * p.0).powi(2))
            .sum();
        let s = (sse / (n - 2) as f64).sqrt();
        let nf = n as f64;
        Some(Fit {
            slope: Interval::around(slope, s / sxx.sqrt(), n - 2, n),
            intercept: Interval::around(
                intercept,
                s * (1.0 / nf + x_mean * x_mean / sxx).sqrt(),
                n - 2,
                n,
            ),
            s,
            x_mean,
            sxx,
        })
    }

    /// The line's value at `x`, with the interval of that mean value.
    pub(crate) fn at(&self, x: f64) -> Interval {
        let n = self.slope.n;
        let se = self.s * (1.0 / n as f64 + (x - self.x_mean).powi(2) / self.sxx).sqrt();
        Interval::around(self.intercept.mean + self.slope.mean * x, se, n - 2, n)
    }
}

/// The 97.5th percentile of Student's t with `df` degrees of freedom (the two-sided 95% bound):
/// tabulated to 30, then the Cornish-Fisher expansion around the normal's 1.96 (within 0.1%).
fn t_975(df: usize) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    tabulated(&TABLE, df, |n| {
        let z = 1.959964_f64;
        z + (z.powi(3) + z) / (4.0 * n)
            + (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / (96.0 * n * n)
    })
}

/// A quantile of Student's t from its `table` for 1 to 30 degrees of freedom, `beyond` them
/// from the degrees of freedom; infinite with none.
fn tabulated(table: &[f64; 30], df: usize, beyond: impl Fn(f64) -> f64) -> f64 {
    match df {
        0 => f64::INFINITY,
        1..=30 => table[df - 1],
        _ => beyond(df as f64),
    }
}

/// The 80th percentile of Student's t with `df` degrees of freedom (a test's 80% power beside
/// its 95% bound): tabulated to 30, then the normal's 0.8416.
fn t_80(df: usize) -> f64 {
    const TABLE: [f64; 30] = [
        1.376, 1.061, 0.978, 0.941, 0.920, 0.906, 0.896, 0.889, 0.883, 0.879, 0.876, 0.873, 0.870,
        0.868, 0.866, 0.865, 0.863, 0.862, 0.861, 0.860, 0.859, 0.858, 0.858, 0.857, 0.856, 0.856,
        0.855, 0.855, 0.854, 0.854,
    ];
    tabulated(&TABLE, df, |_| 0.8416)
}

/// The smallest true mean of `n` values with standard deviation `sd` that a two-sided t-test
/// at 5% tells from zero with 80% power; `None` with fewer than two values.
pub(crate) fn detectable_mean(sd: f64, n: usize) -> Option<f64> {
    (n >= 2).then(|| (t_975(n - 1) + t_80(n - 1)) * sd / (n as f64).sqrt())
}

/// The significance level of every comparison.
pub(crate) const SIGNIFICANCE: f64 = 0.05;

/// The outcome of a two-sided Mann-Whitney U test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct MannWhitney {
    /// U statistic of the first sample (scipy's `statistic`).
    pub u1: f64,
    /// Two-sided p-value.
    pub p: f64,
    /// Whether the exact distribution was used (else the normal approximation).
    pub exact: bool,
}

/// The smallest two-sided p-value the exact test can give for samples of these sizes:
/// 2 / C(n1 + n2, n1). When it is not below 0.05 the test can never be significant.
pub(crate) fn min_p_value(n1: usize, n2: usize) -> f64 {
    if n1 == 0 || n2 == 0 {
        return 1.0;
    }
    (2.0 / binomial(n1 + n2, n1)).min(1.0)
}

fn binomial(n: usize, k: usize) -> f64 {
    (0..k).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64)
}

/// Two-sided Mann-Whitney U test of `x` against `y`; `None` when either sample is empty.
pub(crate) fn mann_whitney_u(x: &[f64], y: &[f64]) -> Option<MannWhitney> {
    let (n1, n2) = (x.len(), y.len());
    if n1 == 0 || n2 == 0 {
        return None;
    }
    let (ranks, tie_sum) = ranks_of(x.iter().chain(y).copied().collect());
    let r1: f64 = ranks[..n1].iter().sum();
    let u1 = r1 - (n1 * (n1 + 1)) as f64 / 2.0;
    let u2 = (n1 * n2) as f64 - u1;
    let u = u1.max(u2);
    let exact = n1.min(n2) <= 8 && n1.max(n2) <= 64 && tie_sum == 0.0;
    let p = if exact {
        // P(U >= u) under the null, doubled for two sides.
        2.0 * exact_sf(n1, n2, u.round() as usize)
    } else {
        let n = (n1 + n2) as f64;
        let mu = (n1 * n2) as f64 / 2.0;
        let var = (n1 * n2) as f64 / 12.0 * ((n + 1.0) - tie_sum / (n * (n - 1.0)));
        if var <= 0.0 {
            1.0
        } else {
            let z = (u - mu - 0.5) / var.sqrt();
            2.0 * normal_sf(z)
        }
    };
    Some(MannWhitney {
        u1,
        p: p.clamp(0.0, 1.0),
        exact,
    })
}

/// Average ranks (1-based) of `values` in their order, and sum over tie groups of t^3 - t.
fn ranks_of(values: Vec<f64>) -> (Vec<f64>, f64) {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    let mut ranks = vec![0.0; values.len()];
    let mut tie_sum = 0.0;
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && values[order[j + 1]] == values[order[i]] {
            j += 1;
        }
        let avg = (i + j) as f64 / 2.0 + 1.0;
        for &k in &order[i..=j] {
            ranks[k] = avg;
        }
        let t = (j - i + 1) as f64;
        tie_sum += t * t * t - t;
        i = j + 1;
    }
    (ranks, tie_sum)
}

/// P(U >= u) for the exact null distribution of U with sample sizes n1, n2.
fn exact_sf(n1: usize, n2: usize, u: usize) -> f64 {
    // counts[m][n][k]: arrangements of m x's and n y's with U = k, by the usual recurrence
    // f(m, n, k) = f(m - 1, n, k - n) + f(m, n - 1, k).
    let max_u = n1 * n2;
    let mut table = vec![vec![vec![0.0f64; max_u + 1]; n2 + 1]; n1 + 1];
    for (m, row) in table.iter_mut().enumerate() {
        for (n, cell) in row.iter_mut().enumerate() {
            if m == 0 || n == 0 {
                cell[0] = 1.0;
            }
        }
    }
    for m in 1..=n1 {
        for n in 1..=n2 {
            for k in 0..=m * n {
                let a = if k >= n { table[m - 1][n][k - n] } else { 0.0 };
                let b = table[m][n - 1][k];
                table[m][n][k] = a + b;
            }
        }
    }
    let counts = &table[n1][n2];
    let total: f64 = counts.iter().sum();
    counts[u.min(max_u)..].iter().sum::<f64>() / total
}

/// Which of the hypotheses with these p-values Holm's step-down procedure rejects at a
/// family-wise error rate of `alpha`: sorted ascending, the k-th smallest (0-based) is rejected
/// while it is below `alpha / (m - k)`. It controls the chance of any false alarm among the `m`
/// tests, as Bonferroni does, but rejects more when several effects are real.
pub(crate) fn holm(p_values: &[f64], alpha: f64) -> Vec<bool> {
    let m = p_values.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| p_values[a].total_cmp(&p_values[b]));
    let mut reject = vec![false; m];
    for (k, &i) in order.iter().enumerate() {
        if p_values[i] < alpha / (m - k) as f64 {
            reject[i] = true;
        } else {
            break;
        }
    }
    reject
}

/// The fewest repetitions a side needs (with as many on the other) for the exact test to be
/// able to reach p < `level`.
pub(crate) fn repetitions_for(level: f64) -> usize {
    (1..=64)
        .find(|&n| min_p_value(n, n) < level)
        .unwrap_or(usize::MAX)
}

/// A monotonic trend of values in time order (the Mann-Kendall test).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Trend {
    /// Kendall's tau between value and position: +1 steadily rising, -1 steadily falling.
    pub tau: f64,
    /// Two-sided p-value of "no trend".
    pub p: f64,
}

/// The Mann-Kendall trend test of `values` in the order given; `None` for fewer than 3 values.
/// Exact (the permutation distribution of inversions) without ties, else the normal
/// approximation with the tie-corrected variance.
pub(crate) fn trend(values: &[f64]) -> Option<Trend> {
    let n = values.len();
    if n < 3 {
        return None;
    }
    let mut s: i64 = 0;
    for i in 0..n {
        for j in i + 1..n {
            s += match values[j].total_cmp(&values[i]) {
                std::cmp::Ordering::Greater => 1,
                std::cmp::Ordering::Less => -1,
                std::cmp::Ordering::Equal => 0,
            };
        }
    }
    let pairs = (n * (n - 1) / 2) as i64;
    let tau = s as f64 / pairs as f64;
    let groups = tie_groups(values);
    let p = if groups.iter().all(|&t| t == 1.0) {
        // S = pairs - 2 * inversions; |S| >= |s| in either tail.
        let counts = inversion_counts(n);
        let total: f64 = counts.iter().sum();
        let a = s.unsigned_abs() as i64;
        let low = (pairs - a) / 2;
        let high = (pairs + a + 1) / 2;
        let tail: f64 = counts
            .iter()
            .enumerate()
            .filter(|&(i, _)| (i as i64) <= low || (i as i64) >= high)
            .map(|(_, c)| c)
            .sum();
        tail / total
    } else {
        let nf = n as f64;
        let var = (nf * (nf - 1.0) * (2.0 * nf + 5.0)
            - groups
                .iter()
                .map(|&t| t * (t - 1.0) * (2.0 * t + 5.0))
                .sum::<f64>())
            / 18.0;
        if var <= 0.0 || s == 0 {
            1.0
        } else {
            let z = (s.abs() as f64 - 1.0) / var.sqrt();
            2.0 * normal_sf(z)
        }
    };
    Some(Trend {
        tau,
        p: p.clamp(0.0, 1.0),
    })
}

/// How many permutations of `n` items have k inversions, for every k (Mahonian numbers).
fn inversion_counts(n: usize) -> Vec<f64> {
    let mut counts = vec![1.0];
    for k in 2..=n {
        let mut next = vec![0.0; counts.len() + k - 1];
        for (i, c) in counts.iter().enumerate() {
            for slot in &mut next[i..i + k] {
                *slot += c;
            }
        }
        counts = next;
    }
    counts
}

/// The sizes of the groups of equal values.
fn tie_groups(values: &[f64]) -> Vec<f64> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let mut groups = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let j = v[i..].iter().take_while(|&&x| x == v[i]).count();
        groups.push(j as f64);
        i += j;
    }
    groups
}

/// Power the detectable change is defined at: the chance of finding a real change of that size.
pub(crate) const POWER: f64 = 0.8;

/// The smallest shift, in standard deviations of normally distributed repetitions, that the
/// two-sided Mann-Whitney test at `level` finds with probability [`POWER`] given `n1` and `n2`
/// repetitions; `None` when no shift can reach `level` with so few.
///
/// Estimated by simulation with a fixed seed (the same sizes always give the same answer): the
/// test is rank-based, so its power against a shift depends only on the shift in standard
/// deviations, and the same noise is reused for every candidate shift, which keeps the search
/// monotonic.
pub(crate) fn detectable_shift(n1: usize, n2: usize, level: f64) -> Option<f64> {
    if n1 == 0 || n2 == 0 || min_p_value(n1, n2) >= level {
        return None;
    }
    const TRIALS: usize = 1000;
    let mut rng = SplitMix64(0x5eed_cafe);
    let noise: Vec<Vec<f64>> = (0..TRIALS)
        .map(|_| (0..n1 + n2).map(|_| rng.normal()).collect())
        .collect();
    let power = |shift: f64| {
        let found = noise
            .iter()
            .filter(|z| {
                let y: Vec<f64> = z[n1..].iter().map(|v| v + shift).collect();
                mann_whitney_u(&z[..n1], &y).is_some_and(|r| r.p < level)
            })
            .count();
        found as f64 / TRIALS as f64
    };
    let mut hi = 1.0;
    while power(hi) < POWER {
        hi *= 2.0;
        if hi > 1024.0 {
            return None;
        }
    }
    let mut lo = 0.0;
    for _ in 0..14 {
        let mid = (lo + hi) / 2.0;
        if power(mid) >= POWER {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(hi)
}

/// A small seeded generator for [`detectable_shift`]'s simulation (SplitMix64): reproducible
/// noise is all it needs, not cryptographic or statistical-suite quality.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1].
    fn uniform(&mut self) -> f64 {
        ((self.next() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }

    /// Standard normal (Box-Muller).
    fn normal(&mut self) -> f64 {
        let (u, v) = (self.uniform(), self.uniform());
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

/// Upper tail of the standard normal distribution.
pub(crate) fn normal_sf(z: f64) -> f64 {
    0.5 * erfc(z / std::f64::consts::SQRT_2)
}

/// Complementary error function (Chebyshev fit of Numerical Recipes' `erfcc`, fractional error
/// below 1.2e-7 everywhere, ample for p-values compared against 0.05).
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let r = t
        * (-z * z - 1.265_512_23
            + t * (1.000_023_68
                + t * (0.374_091_96
                    + t * (0.096_784_18
                        + t * (-0.186_288_06
                            + t * (0.278_868_07
                                + t * (-1.135_203_98
                                    + t * (1.488_515_87
                                        + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
            .exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * b.abs().max(1e-12)
    }

    #[test]
    fn median_odd_even_and_unsorted() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(&[7.0]), 7.0);
        assert!(median(&[]).is_nan());
    }

    #[test]
    fn spread_of_a_textbook_sample() {
        // 2, 4, 4, 4, 5, 5, 7, 9: mean 5, sample variance 32/7.
        let v = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        assert_eq!(mean(&v), 5.0);
        assert!(close(std_dev(&v), (32.0f64 / 7.0).sqrt(), 1e-12));
        assert!(close(
            cv_percent(&v),
            (32.0f64 / 7.0).sqrt() / 5.0 * 100.0,
            1e-12
        ));
        assert_eq!(min_max(&v), (2.0, 9.0));
        assert_eq!(cv_percent(&[5.0]), 0.0);
    }

    #[test]
    fn exact_mann_whitney_matches_scipy() {
        // scipy.stats.mannwhitneyu(x, y) (two-sided, method auto -> exact):
        // [1,2,3,4,5] vs [6,7,8,9,10]: U1 = 0, p = 0.007936507936507936
        let r = mann_whitney_u(&[1.0, 2.0, 3.0, 4.0, 5.0], &[6.0, 7.0, 8.0, 9.0, 10.0]).unwrap();
        assert!(r.exact);
        assert_eq!(r.u1, 0.0);
        assert!(close(r.p, 0.007936507936507936, 1e-12), "{r:?}");
        // [1,3,5,7] vs [2,4,6,8,10]: U1 = 6, p = 0.4126984126984127
        let r = mann_whitney_u(&[1.0, 3.0, 5.0, 7.0], &[2.0, 4.0, 6.0, 8.0, 10.0]).unwrap();
        assert_eq!(r.u1, 6.0);
        assert!(close(r.p, 0.4126984126984127, 1e-12), "{r:?}");
        // Three against three can never go below p = 0.1.
        let r = mann_whitney_u(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]).unwrap();
        assert!(close(r.p, 0.1, 1e-12), "{r:?}");
    }

    #[test]
    fn asymptotic_mann_whitney_matches_scipy() {
        // With ties scipy uses the normal approximation with tie correction:
        // mannwhitneyu([1,2,2,3,4], [2,3,5,6,6]) -> U1 = 4.5, p = 0.11049202405566802
        let r = mann_whitney_u(&[1.0, 2.0, 2.0, 3.0, 4.0], &[2.0, 3.0, 5.0, 6.0, 6.0]).unwrap();
        assert!(!r.exact);
        assert_eq!(r.u1, 4.5);
        assert!(close(r.p, 0.11049202405566802, 1e-5), "{r:?}");
        // Nine against ten without ties: U1 = 18, p = 0.030486156935263346.
        let x = [1.1, 2.3, 3.2, 4.8, 5.0, 6.7, 7.4, 8.9, 9.5];
        let y = [3.3, 5.5, 6.1, 7.7, 8.2, 9.9, 10.4, 11.8, 12.6, 13.0];
        let r = mann_whitney_u(&x, &y).unwrap();
        assert!(!r.exact);
        assert_eq!(r.u1, 18.0);
        assert!(close(r.p, 0.030486156935263346, 1e-5), "{r:?}");
    }

    #[test]
    fn exact_up_to_eight_values_matches_scipy() {
        // mannwhitneyu(range(1, 9), range(9, 17)) -> exact, p = 0.0001554001554001554
        let x: Vec<f64> = (1..=8).map(f64::from).collect();
        let y: Vec<f64> = (9..=16).map(f64::from).collect();
        let r = mann_whitney_u(&x, &y).unwrap();
        assert!(r.exact);
        assert!(close(r.p, 0.0001554001554001554, 1e-10), "{r:?}");
    }

    #[test]
    fn identical_samples_are_not_different() {
        let r = mann_whitney_u(&[5.0; 5], &[5.0; 5]).unwrap();
        assert_eq!(r.p, 1.0);
        assert!(mann_whitney_u(&[], &[1.0]).is_none());
    }

    /// Whether samples of these sizes can show a difference at p < 0.05 at all.
    fn can_be_significant(n1: usize, n2: usize) -> bool {
        min_p_value(n1, n2) < SIGNIFICANCE
    }

    #[test]
    fn sample_sizes_that_can_reach_significance() {
        assert!(!can_be_significant(1, 1));
        assert!(!can_be_significant(3, 3));
        assert!(can_be_significant(4, 4));
        assert!(can_be_significant(5, 5));
        assert!(close(min_p_value(5, 5), 2.0 / 252.0, 1e-12));
    }

    #[test]
    fn holm_steps_down_and_stops_at_the_first_failure() {
        // m = 4: thresholds 0.0125, 0.0167, 0.025, 0.05 for the sorted p-values.
        assert_eq!(
            holm(&[0.01, 0.04, 0.015, 0.03], 0.05),
            [true, false, true, false]
        );
        // 0.02 misses the first step (0.0125): nothing is rejected, though 0.02 < 0.05.
        assert_eq!(holm(&[0.02, 0.02, 0.02, 0.02], 0.05), [false; 4]);
        // statsmodels multipletests([0.001, 0.2, 0.012], method="holm") rejects the 1st and 3rd.
        assert_eq!(holm(&[0.001, 0.2, 0.012], 0.05), [true, false, true]);
        assert!(holm(&[], 0.05).is_empty());
    }

    #[test]
    fn repetitions_needed_grow_with_the_number_of_tests() {
        assert_eq!(repetitions_for(0.05), 4);
        // Two primary tests (one scenario): 4 a side give 0.029, not below 0.025.
        assert_eq!(repetitions_for(0.025), 5);
        // Ten (five scenarios): 5 a side give 0.0079, not below 0.005.
        assert_eq!(repetitions_for(0.005), 6);
    }

    #[test]
    fn mann_kendall_matches_scipy_kendalltau_against_time() {
        // scipy.stats.kendalltau(range(5), x) (exact for n <= 33 without ties).
        let t = trend(&[1.0, 2.0, 3.0, 4.0, 5.0]).unwrap();
        assert_eq!(t.tau, 1.0);
        assert!(close(t.p, 0.016666666666666666, 1e-12), "{t:?}");
        // [3, 1, 4, 5, 2, 6]: tau = 0.4666666666666666, p = 0.2722222222222222
        let t = trend(&[3.0, 1.0, 4.0, 5.0, 2.0, 6.0]).unwrap();
        assert!(close(t.tau, 7.0 / 15.0, 1e-12), "{t:?}");
        assert!(close(t.p, 0.2722222222222222, 1e-12), "{t:?}");
        let t = trend(&[5.0, 4.0, 3.0, 2.0, 1.0, 0.0]).unwrap();
        assert_eq!(t.tau, -1.0);
        assert!(close(t.p, 2.0 / 720.0, 1e-12), "{t:?}");
        // Ties: the normal approximation; flat values show no trend.
        assert_eq!(trend(&[2.0; 6]).unwrap().p, 1.0);
        assert!(trend(&[1.0, 2.0]).is_none());
    }

    #[test]
    fn detectable_shift_shrinks_with_repetitions_and_needs_enough_of_them() {
        // Three a side can never be significant: nothing is detectable.
        assert_eq!(detectable_shift(3, 3, 0.05), None);
        assert_eq!(detectable_shift(5, 5, 0.005), None);
        let five = detectable_shift(5, 5, 0.05).unwrap();
        let ten = detectable_shift(10, 10, 0.05).unwrap();
        let strict = detectable_shift(10, 10, 0.005).unwrap();
        // A two-sample t-test needs about 1.9 sd at 5 a side and 1.3 at 10 a side for 80%
        // power; the rank test on so few values needs a little more.
        assert!((1.8..2.6).contains(&five), "{five}");
        assert!((1.2..1.6).contains(&ten), "{ten}");
        assert!(strict > ten, "{strict} vs {ten}");
        // Reproducible.
        assert_eq!(detectable_shift(5, 5, 0.05), Some(five));
    }

    #[test]
    fn normal_tail() {
        assert!(close(normal_sf(0.0), 0.5, 1e-7));
        assert!(close(normal_sf(1.959963984540054), 0.025, 1e-5));
        assert!(close(normal_sf(-1.0), 0.8413447460685429, 1e-6));
    }

    #[test]
    fn a_means_interval_is_students_t() {
        assert_eq!(Interval::of_mean(&[1.0]), None);
        // Mean 2, sample sd 1, n 3: half width 4.303 x 1 / sqrt(3).
        let i = Interval::of_mean(&[1.0, 2.0, 3.0]).unwrap();
        assert_eq!((i.mean, i.n), (2.0, 3));
        assert!((i.high - 2.0 - 4.303 / 3f64.sqrt()).abs() < 1e-9, "{i:?}");
        assert!((i.low + i.high - 4.0).abs() < 1e-12);
        assert!((i.scaled(10.0).high - 10.0 * i.high).abs() < 1e-9);
        // Past the table the expansion continues it smoothly (t(30) = 2.042, t(40) = 2.021,
        // t(120) = 1.980).
        assert!((t_975(31) - 2.040).abs() < 0.002, "{}", t_975(31));
        assert!((t_975(40) - 2.021).abs() < 0.002, "{}", t_975(40));
        assert!((t_975(120) - 1.980).abs() < 0.002, "{}", t_975(120));
    }

    #[test]
    fn a_line_fit_recovers_slope_and_intercept_with_intervals() {
        assert!(Fit::of(&[(1.0, 1.0), (2.0, 2.0)]).is_none());
        assert!(Fit::of(&[(1.0, 1.0), (1.0, 2.0), (1.0, 3.0)]).is_none());
        // y = 0.5 + 2x exactly: no spread, the intervals are points.
        let exact = Fit::of(&[(1.0, 2.5), (2.0, 4.5), (3.0, 6.5)]).unwrap();
        assert!(
            (exact.slope.mean - 2.0).abs() < 1e-12 && (exact.intercept.mean - 0.5).abs() < 1e-12
        );
        assert!((exact.slope.high - exact.slope.low).abs() < 1e-9);
        assert!((exact.at(10.0).mean - 20.5).abs() < 1e-9);
        // With noise (x 0, 1, 2, 3; y 0, 1.1, 1.9, 3): slope 0.98, intercept 0.03, residuals
        // -0.03, 0.09, -0.09, 0.03, so s = sqrt(0.018 / 2), se(slope) = s / sqrt(5), t(2) = 4.303.
        let f = Fit::of(&[(0.0, 0.0), (1.0, 1.1), (2.0, 1.9), (3.0, 3.0)]).unwrap();
        assert!((f.slope.mean - 0.98).abs() < 1e-9, "{f:?}");
        assert!((f.intercept.mean - 0.03).abs() < 1e-9, "{f:?}");
        assert!(
            (f.slope.high - 0.98 - 4.303 * 0.009f64.sqrt() / 5f64.sqrt()).abs() < 1e-9,
            "{f:?}"
        );
        // Far from the points the line's value is less certain than at their middle.
        let (mid, far) = (f.at(1.5), f.at(30.0));
        assert!(far.high - far.low > mid.high - mid.low);
    }
}
