//! Quantiles for the summaries people read (raplbench-interfere's and the
//! victim probe's, raplbench-sample's on stderr). Result rows are built,
//! and their statistics chosen, in Python alone (results/stats.py).

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

/// The median of `values` (numpy's: the mean of the two middle values of
/// an even count); None for none.
pub fn median(values: &[f64]) -> Option<f64> {
    let mut x = values.to_vec();
    x.sort_by(f64::total_cmp);
    (!x.is_empty()).then(|| quantile_sorted(&x, 0.5))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_like_numpy() {
        let x: Vec<f64> = (1..=10).map(f64::from).collect();
        assert!((quantile_sorted(&x, 0.05) - 1.45).abs() < 1e-12); // numpy.percentile(x, 5)
        assert!((quantile_sorted(&x, 0.95) - 9.55).abs() < 1e-12);
        assert_eq!(quantile_sorted(&[3.0], 0.5), 3.0);
        assert_eq!(median(&[5.0, 1.0, 4.0, 2.0]), Some(3.0));
        assert_eq!(median(&[2.0, 9.0, 1.0]), Some(2.0));
        assert_eq!(median(&[]), None);
    }
}
