//! Summary statistics of a row's samples: a Rust copy of results/stats.py,
//! where every statistical choice of raplbench is made and explained. The
//! sampler keeps its own copy so that its --report is self-contained on a
//! machine without the Python environment; rows it writes read like every
//! other row:
//!
//! * mean, median, sample standard deviation (n − 1; 0 for one sample);
//! * min, max, 5th and 95th percentiles (numpy's linear interpolation,
//!   computed with numpy's arithmetic);
//! * a distribution-free 95% confidence interval of the median from order
//!   statistics: [x₍ₖ₎, x₍ₙ₋ₖ₊₁₎] with the largest k whose coverage
//!   P(k ≤ B ≤ n−k), B ~ Binomial(n, ½), is still ≥ 95%; min and max when
//!   n ≤ 5 (too few samples for 95%).
//!
//! The two copies are pinned together by results/golden/summary.json, which
//! `python -m results.golden` writes from stats.py (inputs chosen for their
//! edge cases, and the median-CI ranks for n = 1..200 and some large n):
//! results/test_golden.py fails when the file is not what stats.py computes
//! now, and this module's tests fail when Rust disagrees with the file
//! (ranks and n exactly, every other value to 1e-12 relative; only the mean
//! differs at all, by numpy's pairwise summation). Change stats.py and this
//! file together, then regenerate.

/// The summary fields of a result row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// Number of samples.
    pub n: usize,
    /// Arithmetic mean.
    pub mean: f64,
    /// Median.
    pub median: f64,
    /// Sample standard deviation (n − 1 denominator).
    pub stddev: f64,
    /// Smallest sample.
    pub min: f64,
    /// Largest sample.
    pub max: f64,
    /// 5th percentile.
    pub p05: f64,
    /// 95th percentile.
    pub p95: f64,
    /// Lower end of the 95% confidence interval of the median.
    pub ci95_low: f64,
    /// Upper end of the 95% confidence interval of the median.
    pub ci95_high: f64,
}

/// The q-quantile (0 ≤ q ≤ 1) of sorted, non-empty `x`, linearly
/// interpolated with numpy's arithmetic (`numpy.percentile`'s `_lerp`:
/// from the nearer neighbour), so results agree to the last bit.
pub fn quantile_sorted(x: &[f64], q: f64) -> f64 {
    let pos = (x.len() - 1) as f64 * q;
    let lo = pos.floor() as usize;
    let (a, b) = (x[lo], x[(lo + 1).min(x.len() - 1)]);
    let t = pos - lo as f64;
    let d = b - a;
    if t >= 0.5 {
        b - d * (1.0 - t)
    } else {
        a + d * t
    }
}

/// The median of sorted, non-empty `x` as `numpy.median` computes it: the
/// middle value, or the mean of the two middle values.
fn median_sorted(x: &[f64]) -> f64 {
    let n = x.len();
    if n % 2 == 1 {
        x[n / 2]
    } else {
        (x[n / 2 - 1] + x[n / 2]) / 2.0
    }
}

/// 1-based ranks (k, n−k+1) of the order statistics bounding the median
/// with at least `confidence` coverage; (1, n) when none does.
///
/// ```
/// assert_eq!(rbench::summary::median_ci_ranks(10, 0.95), (2, 9));
/// assert_eq!(rbench::summary::median_ci_ranks(20, 0.95), (6, 15));
/// ```
pub fn median_ci_ranks(n: usize, confidence: f64) -> (usize, usize) {
    assert!(n >= 1, "need at least one sample");
    // cdf[i] = P(B <= i), from pmfs computed in log space (no underflow)
    let ln_half_n = -(n as f64) * std::f64::consts::LN_2;
    let mut ln_pmf = ln_half_n;
    let mut cdf = Vec::with_capacity(n / 2 + 1);
    let mut acc = 0.0;
    for i in 0..=n / 2 {
        if i > 0 {
            ln_pmf += ((n - i + 1) as f64).ln() - (i as f64).ln();
        }
        acc += ln_pmf.exp();
        cdf.push(acc);
    }
    let mut best = 1;
    for k in 1..=n / 2 {
        if 1.0 - 2.0 * cdf[k - 1] >= confidence {
            best = k;
        }
    }
    (best, n - best + 1)
}

impl Summary {
    /// The summary of `samples`; None when there are none.
    pub fn of(samples: &[f64]) -> Option<Summary> {
        let n = samples.len();
        if n == 0 {
            return None;
        }
        let mut x = samples.to_vec();
        x.sort_by(f64::total_cmp);
        let mean = x.iter().sum::<f64>() / n as f64;
        let stddev = if n > 1 {
            (x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
        } else {
            0.0
        };
        let (lo, hi) = median_ci_ranks(n, 0.95);
        Some(Summary {
            n,
            mean,
            median: median_sorted(&x),
            stddev,
            min: x[0],
            max: x[n - 1],
            p05: quantile_sorted(&x, 0.05),
            p95: quantile_sorted(&x, 0.95),
            ci95_low: x[lo - 1],
            ci95_high: x[hi - 1],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    /// results/stats.py's answers for inputs chosen for their edge cases
    /// (`python -m results.golden` writes the file, results/test_golden.py
    /// keeps it current).
    const GOLDEN: &str = include_str!("../../results/golden/summary.json");

    /// a == b for floats: equal, or within 1e-12 relative.
    fn close(a: f64, b: f64) -> bool {
        a == b || (a - b).abs() <= 1e-12 * a.abs().max(b.abs())
    }

    #[test]
    fn agrees_with_stats_py_on_the_golden_cases() {
        let golden: Value = serde_json::from_str(GOLDEN).unwrap();
        let confidence = golden["confidence"].as_f64().unwrap();
        assert_eq!(confidence, 0.95);
        for case in golden["cases"].as_array().unwrap() {
            let name = case["name"].as_str().unwrap();
            let samples: Vec<f64> = case["samples"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap())
                .collect();
            let want = &case["summary"];
            let Some(got) = Summary::of(&samples) else {
                assert_eq!(want["n"], 0, "{name}");
                for key in golden["summary_keys"].as_array().unwrap() {
                    let key = key.as_str().unwrap();
                    assert!(key == "n" || want[key].is_null(), "{name}: {key}");
                }
                assert!(case["median_ci_ranks"].is_null(), "{name}");
                continue;
            };
            assert_eq!(got.n as u64, want["n"].as_u64().unwrap(), "{name}: n");
            let ranks = median_ci_ranks(got.n, confidence);
            assert_eq!(
                [ranks.0 as u64, ranks.1 as u64],
                [
                    case["median_ci_ranks"][0].as_u64().unwrap(),
                    case["median_ci_ranks"][1].as_u64().unwrap()
                ],
                "{name}: median CI ranks"
            );
            let fields = [
                ("mean", got.mean),
                ("median", got.median),
                ("stddev", got.stddev),
                ("min", got.min),
                ("max", got.max),
                ("p05", got.p05),
                ("p95", got.p95),
                ("ci95_low", got.ci95_low),
                ("ci95_high", got.ci95_high),
            ];
            for (key, value) in fields {
                let expected = want[key].as_f64().unwrap();
                assert!(
                    close(value, expected),
                    "{name}: {key} is {value:e} in Rust, {expected:e} in results/stats.py"
                );
            }
        }
    }

    #[test]
    fn median_ci_ranks_agree_with_stats_py() {
        let golden: Value = serde_json::from_str(GOLDEN).unwrap();
        for entry in golden["median_ci_ranks"].as_array().unwrap() {
            let [n, lo, hi] = [0, 1, 2].map(|i| entry[i].as_u64().unwrap() as usize);
            assert_eq!(median_ci_ranks(n, 0.95), (lo, hi), "n = {n}");
        }
    }

    #[test]
    fn ranks_match_published_tables_and_stats_py() {
        assert_eq!(median_ci_ranks(10, 0.95), (2, 9));
        assert_eq!(median_ci_ranks(20, 0.95), (6, 15));
        assert_eq!(median_ci_ranks(100, 0.95), (40, 61));
        assert_eq!(median_ci_ranks(5, 0.95), (1, 5)); // too few: min and max
        let (k, _) = median_ci_ranks(100_000, 0.95); // large n: no underflow
        assert!((49_680..49_700).contains(&k), "{k}");
    }

    #[test]
    fn summary_like_numpy() {
        let s = Summary::of(&[5.0, 1.0, 4.0, 2.0, 3.0, 10.0, 9.0, 8.0, 7.0, 6.0]).unwrap();
        assert_eq!((s.n, s.min, s.max), (10, 1.0, 10.0));
        assert_eq!(s.median, 5.5);
        assert_eq!(s.mean, 5.5);
        assert!((s.stddev - 3.0276503540974917).abs() < 1e-12);
        assert!((s.p05 - 1.45).abs() < 1e-12); // numpy.percentile(x, 5)
        assert!((s.p95 - 9.55).abs() < 1e-12);
        assert_eq!((s.ci95_low, s.ci95_high), (2.0, 9.0));
        assert_eq!(Summary::of(&[]), None);
        assert_eq!(Summary::of(&[3.0]).unwrap().stddev, 0.0);
    }
}
