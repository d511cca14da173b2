"""The significance tests of the report and the gate, each once: Shapiro–Wilk
for normality, Kruskal–Wallis across groups, Dunn's post-hoc test with
Bonferroni correction pairwise, Cliff's delta as the effect size; for two
groups Mann–Whitney U, for one group against zero the Wilcoxon signed-rank
test, for paired differences the paired t test and the t interval of
their mean. The report runs them as Diamond & Stoico 2026 do (section
3.4; plots/report_tables_stats.py), the gate on each row's samples or
rounds (ci/gate_stats.py), the agreement report on its runs' ratios; and
the bootstrap CI of a statistic of two samples (the agreement's ratio of
medians, the findings' difference of medians).

Thin wrappers over scipy.stats and scikit-posthocs (no rank test is written
here). Each returns a small dataclass; degenerate input (too few values,
all values equal, one group, NaN) gives a result whose numbers are None and
whose `note` says why, never an exception or a warning. NaN values are
dropped before testing, and Wilcoxon's zeros (the n's count what was
tested).
"""

import dataclasses
import math
import warnings

import numpy as np
from scipy import stats

# The report's significance level; the gate sets its own (ci/gate.toml, alpha).
ALPHA = 0.05
# Romano, Kromrey, Coraggio & Skowronek 2006: |δ| < 0.147 negligible,
# < 0.33 small, < 0.474 medium, else large
MAGNITUDE_THRESHOLDS = ((0.147, "negligible"), (0.33, "small"), (0.474, "medium"))


def clean(values) -> np.ndarray:
    """The finite values as floats (NaN and None dropped)."""
    a = np.asarray([np.nan if v is None else v for v in values], dtype=float)
    return a[np.isfinite(a)]


def all_equal(a: np.ndarray) -> bool:
    return a.size > 0 and bool(np.all(a == a[0]))


# ---- normality ---------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Normality:
    n: int
    w: float | None          # Shapiro–Wilk W
    p: float | None
    note: str | None = None  # why there is no W

    @property
    def rejects(self) -> bool | None:
        """Normality rejected at ALPHA (None: not tested)."""
        return None if self.p is None else self.p < ALPHA


def shapiro_wilk(values) -> Normality:
    """Shapiro–Wilk (scipy.stats.shapiro); needs at least 3 values that are
    not all equal."""
    a = clean(values)
    if a.size < 3:
        return Normality(a.size, None, None, f"n = {a.size} < 3: Shapiro–Wilk needs 3 values")
    if all_equal(a):
        return Normality(a.size, None, None, "all values equal: no distribution to test")
    res = stats.shapiro(a)
    return Normality(a.size, float(res.statistic), float(res.pvalue))


# ---- across k groups -----------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Omnibus:
    ns: tuple[int, ...]
    h: float | None           # Kruskal–Wallis H (tie-corrected)
    df: int | None
    p: float | None
    note: str | None = None


def kruskal_wallis(groups) -> Omnibus:
    """Kruskal–Wallis H across groups (scipy.stats.kruskal), df = k − 1."""
    gs = [clean(g) for g in groups]
    ns = tuple(g.size for g in gs)
    if len(gs) < 2:
        return Omnibus(ns, None, None, None, f"{len(gs)} group: nothing to compare")
    if min(ns) == 0:
        return Omnibus(ns, None, None, None, "a group has no values")
    if all_equal(np.concatenate(gs)):
        return Omnibus(ns, None, None, None, "all values equal: no ranking to test")
    res = stats.kruskal(*gs)
    return Omnibus(ns, float(res.statistic), len(gs) - 1, float(res.pvalue))


@dataclasses.dataclass(frozen=True)
class Dunn:
    """Dunn's test, two-sided, Bonferroni over all k(k−1)/2 pairs."""
    ns: tuple[int, ...]
    p_adj: np.ndarray | None  # k x k, symmetric, 1 on the diagonal
    note: str | None = None

    @property
    def pairs(self) -> int:
        k = len(self.ns)
        return k * (k - 1) // 2

    def p(self, i: int, j: int) -> float | None:
        if self.p_adj is None:
            return None
        value = float(self.p_adj[i, j])
        return None if math.isnan(value) else value


def dunn_bonferroni(groups) -> Dunn:
    """scikit_posthocs.posthoc_dunn(groups, p_adjust="bonferroni"): p values
    in the order of `groups`."""
    gs = [clean(g) for g in groups]
    ns = tuple(g.size for g in gs)
    if len(gs) < 2:
        return Dunn(ns, None, f"{len(gs)} group: nothing to compare")
    if min(ns) == 0:
        return Dunn(ns, None, "a group has no values")
    if all_equal(np.concatenate(gs)):
        return Dunn(ns, None, "all values equal: no ranking to test")
    import scikit_posthocs  # pandas with it: only the report needs them, not the gate
    frame = scikit_posthocs.posthoc_dunn([list(g) for g in gs], p_adjust="bonferroni")
    # posthoc_dunn labels the groups 1..k; reindex so row i is groups[i]
    labels = list(range(1, len(gs) + 1))
    return Dunn(ns, frame.reindex(index=labels, columns=labels).to_numpy(dtype=float))


def dunn_tie_sum(groups) -> float:
    """Σ(t³ − t) over the runs of t tied values in the pooled groups: the
    term of Dunn's variance that posthoc_dunn's tie correction subtracts
    (σ² = N(N+1)/12 − Σ(t³ − t) / (12(N − 1)))."""
    pooled = np.concatenate([clean(g) for g in groups]) if len(groups) else np.array([])
    _, counts = np.unique(pooled, return_counts=True)
    return float(np.sum(counts.astype(float) ** 3 - counts))


def best_dunn_p_adj(n_i: int, n_j: int, ns, tie_sum: float = 0.0) -> float:
    """The smallest Bonferroni-adjusted p Dunn's test can give two groups of
    n_i and n_j values whose values are contiguous in the joint ranking and
    do not overlap (neighbours on a ladder that are fully separated): their
    mean ranks differ by (n_i + n_j) / 2, whatever the data; the groups'
    sizes are `ns` (all k of them). `tie_sum` is the data's dunn_tie_sum:
    ties elsewhere shrink Dunn's variance, so with it the bound is the one
    posthoc_dunn's tie-corrected test attains (without it, the bound for
    untied data, which tied data can beat). Above ALPHA, no neighbouring
    step of such a ladder can be called significant by Dunn–Bonferroni."""
    total, k = sum(ns), len(ns)
    variance = total * (total + 1) / 12 - (tie_sum / (12 * (total - 1)) if total > 1 else 0.0)
    if variance <= 0:
        return 1.0
    z = ((n_i + n_j) / 2) / math.sqrt(variance * (1 / n_i + 1 / n_j))
    return min(1.0, k * (k - 1) / 2 * 2 * float(stats.norm.sf(z)))


# ---- effect size ----------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Effect:
    delta: float | None       # Cliff's delta of x against y, in [−1, 1]
    magnitude: str | None     # Romano et al. 2006: negligible, small, medium, large


def magnitude(delta: float) -> str:
    for threshold, word in MAGNITUDE_THRESHOLDS:
        if abs(delta) < threshold:
            return word
    return "large"


def cliffs_delta(x, y) -> Effect:
    """Cliff's delta δ = P(X > Y) − P(X < Y) over all m·n pairs, computed from
    the Mann–Whitney U statistic of x (scipy.stats.mannwhitneyu: the number
    of pairs with x > y, ties counting one half) as δ = (2U − m·n)/(m·n),
    whose numerator is an integer: exactly (#x > y − #x < y)/(m·n).
    Positive: x tends to be larger. Magnitude after Romano et al. 2006."""
    a, b = clean(x), clean(y)
    if a.size == 0 or b.size == 0:
        return Effect(None, None)
    # U does not depend on the method: "asymptotic" spares the exact p's cost
    u = float(stats.mannwhitneyu(a, b, method="asymptotic").statistic)
    pairs = a.size * b.size
    delta = (2 * u - pairs) / pairs
    return Effect(delta, magnitude(delta))


# ---- two groups, one group against zero ------------------------------------------------------

# Mann–Whitney's exact distribution (scipy) is quick up to this many values a
# group (5 ms at 100 and 100); scipy's own "auto" is exact only up to 8, and
# its normal approximation with continuity correction is conservative at the
# gate's 10 against 10 (p 1.8e-4 where the exact p of two samples apart is 1.1e-5)
EXACT_MAX_N = 100


@dataclasses.dataclass(frozen=True)
class TwoSample:
    n_x: int
    n_y: int
    u: float | None           # Mann–Whitney U of x
    p: float | None           # two-sided
    effect: Effect
    note: str | None = None
    method: str | None = None  # "exact" or "asymptotic" (normal, tie-corrected, continuity)


def mann_whitney_method(a: np.ndarray, b: np.ndarray) -> str:
    """"exact" for untied samples of at most EXACT_MAX_N values each (the
    exact distribution assumes no ties), else "asymptotic"."""
    pooled = np.concatenate([a, b])
    untied = np.unique(pooled).size == pooled.size
    return "exact" if untied and max(a.size, b.size) <= EXACT_MAX_N else "asymptotic"


def mann_whitney(x, y) -> TwoSample:
    """Two-sided Mann–Whitney U (scipy.stats.mannwhitneyu, with the method
    mann_whitney_method chooses and the result says) and Cliff's delta of x
    against y."""
    a, b = clean(x), clean(y)
    if a.size == 0 or b.size == 0:
        return TwoSample(a.size, b.size, None, None, Effect(None, None), "a group has no values")
    effect = cliffs_delta(a, b)
    if all_equal(np.concatenate([a, b])):
        return TwoSample(a.size, b.size, None, None, effect, "all values equal: no ranking to test")
    method = mann_whitney_method(a, b)
    res = stats.mannwhitneyu(a, b, alternative="two-sided", method=method)
    return TwoSample(a.size, b.size, float(res.statistic), float(res.pvalue), effect,
                     method=method)


@dataclasses.dataclass(frozen=True)
class OneSample:
    n: int                    # the values tested: zeros are dropped
    statistic: float | None   # Wilcoxon's T (the smaller signed-rank sum)
    p: float | None           # two-sided, against a median of 0
    note: str | None = None
    zeros: int = 0            # values equal to 0, dropped before testing


def wilcoxon_zero(values) -> OneSample:
    """Wilcoxon signed-rank test of values against 0 (scipy.stats.wilcoxon,
    two-sided; zeros dropped as Wilcoxon does, so n counts the nonzero
    values). scipy is given the nonzero values, so its exact distribution
    applies (up to 50 untied values) where, given the zeros, it would switch
    to the normal approximation."""
    a = clean(values)
    nonzero = a[a != 0]
    zeros = a.size - nonzero.size
    if nonzero.size == 0:
        return OneSample(0, None, None, "every value is 0" if a.size else "no values", zeros)
    with warnings.catch_warnings():
        # few values: scipy warns that its normal approximation is rough; p is still its answer
        warnings.simplefilter("ignore", UserWarning)
        res = stats.wilcoxon(nonzero)
    note = f"{zeros} zero{'s' if zeros > 1 else ''} dropped" if zeros else None
    return OneSample(nonzero.size, float(res.statistic), float(res.pvalue), note, zeros)


def paired_t(differences) -> float:
    """Two-sided p of the paired t test: the mean of `differences` against 0
    (scipy.stats.ttest_1samp). No spread at all: 1.0 when they are all 0,
    else 0.0 (the same nonzero change in every pair)."""
    d = clean(differences)
    if np.ptp(d) == 0:
        return 1.0 if np.all(d == 0) else 0.0
    return float(stats.ttest_1samp(d, 0.0).pvalue)


def t_half_width(values, confidence: float) -> float:
    """Half the width of the two-sided t interval of the mean of `values` at
    `confidence`; needs at least 2 values."""
    a = np.asarray(values, dtype=float)
    return float(stats.t.ppf(0.5 + confidence / 2, a.size - 1) * a.std(ddof=1)
                 / math.sqrt(a.size))


def bootstrap_ci(statistic, a, b, confidence: float = 0.95, resamples: int = 4000,
                 seed: int = 0) -> tuple[float, float] | None:
    """The percentile-bootstrap CI of statistic(a, b, axis), each sample
    resampled on its own (scipy.stats.bootstrap, seeded: the same rows give
    the same interval); None with fewer than 2 values on a side."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    if len(a) < 2 or len(b) < 2:
        return None
    result = stats.bootstrap((a, b), statistic, vectorized=True, paired=False,
                             n_resamples=resamples, confidence_level=confidence,
                             method="percentile", random_state=np.random.default_rng(seed))
    lo, hi = result.confidence_interval
    return float(lo), float(hi)


# ---- wording ----------------------------------------------------------------------------------

def p_text(p: float | None) -> str:
    """"< 0.001", "0.012", "1.00", or "—"."""
    if p is None:
        return "—"
    if p < 0.001:
        return "< 0.001"
    return f"{p:.3f}" if p < 0.1 else f"{p:.2f}"


def delta_text(effect: Effect) -> str:
    """"1.00 (large)", "-0.21 (small)" (an ASCII sign: LaTeX keeps it), or "—"."""
    if effect.delta is None:
        return "—"
    return f"{effect.delta + 0.0:.2f} ({effect.magnitude})"


def verdict(p: float | None) -> str:
    if p is None:
        return "not tested"
    return "significant" if p < ALPHA else "not significant"
