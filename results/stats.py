"""Summary statistics of one row's samples (the per-repetition values).

All statistical choices of raplbench live here, so the summary of a row can
be recomputed from its `samples` at any time:

- spread: sample standard deviation (ddof=1), and the 5th / 95th percentiles
  with numpy's default linear interpolation;
- location: the median, with a distribution-free 95% confidence interval
  taken from order statistics (no normality assumption: latency samples are
  skewed and have outliers). See `median_ci_ranks`.
"""

import numpy as np
from scipy.stats import binom

CONFIDENCE = 0.95

SUMMARY_KEYS = ("n", "mean", "median", "stddev", "min", "max", "p05", "p95",
                "ci95_low", "ci95_high")


def median_ci_ranks(n: int, confidence: float = CONFIDENCE) -> tuple[int, int]:
    """1-based ranks (k, n-k+1) of the order statistics bounding the median.

    The number of samples below the true median is Binomial(n, 1/2), so the
    interval [x_(k), x_(n-k+1)] covers the median with probability
    P(k <= B <= n-k) = 1 - 2 * P(B <= k-1). We take the largest k (the
    narrowest symmetric interval) whose coverage is still >= `confidence`.
    For n = 10 that is k = 2: [x_(2), x_(9)], coverage 97.9%.

    When n <= 5 even [min, max] covers less than 95% (n = 5: 93.75%); we then
    return (1, n), i.e. min and max, and the interval is narrower than it
    claims to be.
    """
    if n < 1:
        raise ValueError("need at least one sample")
    ks = np.arange(1, n // 2 + 1)
    coverage = 1.0 - 2.0 * binom.cdf(ks - 1, n, 0.5)
    ok = ks[coverage >= confidence]
    k = int(ok.max()) if ok.size else 1
    return k, n - k + 1


def summarize(samples) -> dict:
    """Summary of `samples` with the keys of SUMMARY_KEYS, as plain Python
    numbers. Empty samples give n = 0 and None for every other key.

    stddev is 0.0 for a single sample; ci95_low/ci95_high are min and max when
    n < 6 (too few samples for a 95% interval, see `median_ci_ranks`).
    """
    x = np.sort(np.asarray(samples, dtype=float))
    n = int(x.size)
    if n == 0:
        return {key: (0 if key == "n" else None) for key in SUMMARY_KEYS}
    lo, hi = median_ci_ranks(n)
    p05, p95 = np.percentile(x, [5, 95])
    values = {
        "mean": x.mean(),
        "median": np.median(x),
        "stddev": x.std(ddof=1) if n > 1 else 0.0,
        "min": x[0],
        "max": x[-1],
        "p05": p05,
        "p95": p95,
        "ci95_low": x[lo - 1],
        "ci95_high": x[hi - 1],
    }
    return {"n": n, **{key: float(v) for key, v in values.items()}}
