"""Each wrapper of results/significance.py pinned to a published example and
its printed result, plus the degenerate inputs the report can meet."""

import math

import numpy as np
import pytest
from scipy import stats

from results import significance as sig

# Hollander & Wolfe (1973), Nonparametric Statistical Methods, p. 116 (the example
# of R's kruskal.test): mucociliary efficiency, the rate of removal of dust, in
# normal subjects, with obstructive airway disease, with asbestosis.
NORMAL = [2.9, 3.0, 2.5, 2.6, 3.2]
AIRWAY = [3.8, 2.7, 4.0, 2.4]
ASBESTOSIS = [2.8, 3.4, 3.7, 2.2, 2.0]


def test_shapiro_wilk_weights_of_eleven_men():
    # Shapiro & Wilk (1965), Biometrika 52, section 7, example: weights in pounds
    # of 11 men; printed W = 0.79, below the 1% point of W for n = 11 (0.792)
    weights = [148, 154, 158, 160, 161, 162, 166, 170, 182, 195, 236]
    res = sig.shapiro_wilk(weights)
    assert res.n == 11
    assert round(res.w, 2) == 0.79
    assert res.p < 0.01 and res.rejects


def test_shapiro_wilk_does_not_reject_a_normal_sample():
    # the normal quantiles themselves: as normal as 11 values can be
    res = sig.shapiro_wilk(stats.norm.ppf((np.arange(1, 12) - 0.5) / 11))
    assert res.w > 0.95 and not res.rejects


def test_shapiro_wilk_degenerate():
    assert sig.shapiro_wilk([1.0, 2.0]).w is None
    assert "n = 2 < 3" in sig.shapiro_wilk([1.0, 2.0, float("nan")]).note
    constant = sig.shapiro_wilk([5.0] * 10)
    assert constant.w is None and constant.rejects is None and "equal" in constant.note


def test_kruskal_wallis_hollander_wolfe():
    # printed: Kruskal-Wallis chi-squared = 0.77143, df = 2, p-value = 0.68.
    # By hand: the joint ranks give rank sums 36, 36 and 33, so
    # H = 12 / (14 * 15) * (36²/5 + 36²/4 + 33²/5) − 3 * 15 = 0.7714
    res = sig.kruskal_wallis([NORMAL, AIRWAY, ASBESTOSIS])
    assert res.h == pytest.approx(0.77143, abs=5e-6)
    assert res.df == 2 and round(res.p, 2) == 0.68 and res.p >= sig.ALPHA
    assert res.ns == (5, 4, 5)


def test_kruskal_wallis_with_ties():
    # scipy.stats.kruskal's documentation: [1, 1, 1], [2, 2, 2], [2, 2] give
    # H = 7.0, p = 0.0301973834223185 (tie-corrected)
    res = sig.kruskal_wallis([[1, 1, 1], [2, 2, 2], [2, 2]])
    assert res.h == pytest.approx(7.0) and res.p == pytest.approx(0.0301973834223185)


def test_kruskal_wallis_degenerate():
    assert sig.kruskal_wallis([[1.0, 2.0, 3.0]]).note.startswith("1 group")
    assert sig.kruskal_wallis([[1.0] * 5, [1.0] * 5]).h is None
    assert sig.kruskal_wallis([[1.0, 2.0], [float("nan")]]).note == "a group has no values"
    # NaN dropped, the rest tested
    assert sig.kruskal_wallis([[1, 2, 3, float("nan")], [4, 5, 6]]).ns == (3, 3)


def dunn_z(mean_rank_diff, total, n_i, n_j):
    """Dunn (1964), Technometrics 6, eq. for the pairwise statistic, without ties:
    z = |R̄i − R̄j| / sqrt(N(N+1)/12 · (1/ni + 1/nj))."""
    return mean_rank_diff / math.sqrt(total * (total + 1) / 12 * (1 / n_i + 1 / n_j))


def test_dunn_bonferroni_hollander_wolfe_by_hand():
    # joint ranks of the 14 values (by hand): normal 4, 5, 8, 9, 10 (mean 7.2);
    # airway 3, 6, 13, 14 (mean 9.0); asbestosis 1, 2, 7, 11, 12 (mean 6.6)
    res = sig.dunn_bonferroni([NORMAL, AIRWAY, ASBESTOSIS])
    raw = {(0, 1): 2 * stats.norm.sf(dunn_z(1.8, 14, 5, 4)),
           (0, 2): 2 * stats.norm.sf(dunn_z(0.6, 14, 5, 5)),
           (1, 2): 2 * stats.norm.sf(dunn_z(2.4, 14, 4, 5))}
    assert res.pairs == 3
    for (i, j), p in raw.items():
        assert res.p(i, j) == pytest.approx(min(1.0, 3 * p))
        assert res.p(j, i) == res.p(i, j)


def test_dunn_bonferroni_corrects_over_all_pairs_not_holm():
    # three fully separated groups of 5: ranks 1-5, 6-10, 11-15, mean ranks 3, 8, 13;
    # Dunn's z is 5/sqrt(8) for neighbours and 10/sqrt(8) across. Bonferroni
    # multiplies every raw p by the 3 pairs; Holm would multiply the second
    # smallest by 2 only, no correction would leave it raw
    groups = [[1, 2, 3, 4, 5], [6, 7, 8, 9, 10], [11, 12, 13, 14, 15]]
    res = sig.dunn_bonferroni(groups)
    near, far = 2 * stats.norm.sf(5 / math.sqrt(8)), 2 * stats.norm.sf(10 / math.sqrt(8))
    assert res.p(0, 1) == pytest.approx(3 * near) and res.p(1, 2) == pytest.approx(3 * near)
    assert res.p(0, 2) == pytest.approx(3 * far)
    # the groups keep their order (posthoc_dunn sorts by label: 1..k)
    shuffled = sig.dunn_bonferroni([groups[2], groups[0], groups[1]])
    assert shuffled.p(0, 1) == pytest.approx(3 * far)


def test_best_dunn_p_adj_is_what_separated_neighbours_get():
    # the bound is attained by neighbours whose values do not overlap
    groups = [[1, 2, 3, 4, 5], [6, 7, 8, 9, 10], [11, 12, 13, 14, 15]]
    assert sig.best_dunn_p_adj(5, 5, (5, 5, 5)) == pytest.approx(
        sig.dunn_bonferroni(groups).p(0, 1))
    # many groups of 10: Dunn–Bonferroni cannot call a neighbouring step significant
    assert sig.best_dunn_p_adj(10, 10, (10,) * 12) > sig.ALPHA


def test_best_dunn_p_adj_with_ties_is_still_a_bound():
    # five tied values in a third group shrink Dunn's variance (posthoc_dunn's
    # tie correction): the separated neighbours 1-5 and 6-10 then get 0.215,
    # below the untied bound 0.231, and the bound with the data's ties is it
    groups = [[1, 2, 3, 4, 5], [6, 7, 8, 9, 10], [11] * 5]
    real = sig.dunn_bonferroni(groups).p(0, 1)
    untied = sig.best_dunn_p_adj(5, 5, (5, 5, 5))
    assert round(real, 3) == 0.215 and round(untied, 3) == 0.231 and real < untied
    # by hand: one run of t = 5 ties, Σ(t³ − t) = 120
    assert sig.dunn_tie_sum(groups) == 120
    tied = sig.best_dunn_p_adj(5, 5, (5, 5, 5), sig.dunn_tie_sum(groups))
    assert tied == pytest.approx(real)
    # z by hand: 5 / sqrt((15·16/12 − 120/(12·14)) · 2/5)
    z = 5 / math.sqrt((15 * 16 / 12 - 120 / (12 * 14)) * 2 / 5)
    assert tied == pytest.approx(3 * 2 * stats.norm.sf(z))
    # no ties: no term
    assert sig.dunn_tie_sum([[1, 2], [3, float("nan")]]) == 0


def test_dunn_degenerate():
    assert sig.dunn_bonferroni([[1, 2, 3]]).p(0, 0) is None
    assert sig.dunn_bonferroni([[2.0] * 4, [2.0] * 4]).note.startswith("all values equal")


def test_cliffs_delta_by_the_dominance_matrix():
    # Cliff (1993), Psychological Bulletin 114, δ = P(X > Y) − P(X < Y) over all
    # pairs. Counted by hand for x = 1..5, y = 3..7: x > y in 3 pairs (4>3, 5>3,
    # 5>4), equal in 3, x < y in 19 of 25: δ = (3 − 19) / 25 = −0.64
    effect = sig.cliffs_delta([1, 2, 3, 4, 5], [3, 4, 5, 6, 7])
    assert effect.delta == pytest.approx(-0.64)
    assert effect.magnitude == "large"
    assert sig.cliffs_delta([3, 4, 5, 6, 7], [1, 2, 3, 4, 5]).delta == pytest.approx(0.64)


def test_cliffs_delta_extremes_and_zero():
    assert sig.cliffs_delta([5, 6, 7], [1, 2]).delta == 1.0
    assert sig.cliffs_delta([1, 2], [5, 6, 7]).delta == -1.0
    assert sig.cliffs_delta([1, 2, 3], [1, 2, 3]).delta == 0.0
    assert sig.cliffs_delta([4.0] * 3, [4.0] * 5).delta == 0.0
    assert sig.cliffs_delta([], [1.0]).delta is None


def test_cliffs_delta_is_the_count_of_pairs_under_ties():
    # many ties: δ from U is exactly (#x > y − #x < y) / (m·n), counted pair by pair
    rng = np.random.default_rng(7)
    x, y = rng.integers(1, 6, 17), rng.integers(0, 5, 13)
    above = sum(int(a > b) for a in x for b in y)
    below = sum(int(a < b) for a in x for b in y)
    assert sig.cliffs_delta(x, y).delta == (above - below) / (x.size * y.size)


def test_magnitude_thresholds_of_romano_2006():
    # Romano, Kromrey, Coraggio & Skowronek (2006): negligible < 0.147 ≤ small
    # < 0.33 ≤ medium < 0.474 ≤ large, on |δ|
    assert [sig.magnitude(d) for d in (0.146, 0.147, 0.329, 0.33, 0.473, 0.474, -0.5)] == [
        "negligible", "small", "small", "medium", "medium", "large", "large"]


def test_mann_whitney_scipy_example():
    # scipy.stats.mannwhitneyu's documentation, after Conover (1999): ages of
    # males [19, 22, 16, 29, 24] and females [20, 11, 17, 12]: U1 = 17, exact
    # two-sided p = 0.1111
    res = sig.mann_whitney([19, 22, 16, 29, 24], [20, 11, 17, 12])
    assert res.u == 17 and res.p == pytest.approx(0.1111111)
    assert res.effect.delta == pytest.approx(2 * 17 / 20 - 1)


def test_mann_whitney_exact_for_small_untied_samples():
    # two untied groups of 10, every x above every y: U = 100, and of the
    # C(20, 10) equally likely splits exactly one gives U = 100 and one U = 0,
    # so the exact two-sided p is 2 / C(20, 10); scipy's "auto" would have
    # used the normal approximation (exact only up to 8 values)
    x, y = list(range(11, 21)), list(range(1, 11))
    res = sig.mann_whitney(x, y)
    assert res.method == "exact" and res.u == 100
    assert res.p == pytest.approx(2 / math.comb(20, 10))
    # ties: the exact distribution does not hold, the tie-corrected normal one is used
    tied = sig.mann_whitney([1, 2, 2, 3, 5], [2, 4, 6, 6, 7])
    assert tied.method == "asymptotic"
    assert tied.p == pytest.approx(stats.mannwhitneyu([1, 2, 2, 3, 5], [2, 4, 6, 6, 7],
                                                      method="asymptotic").pvalue)
    # many values: asymptotic
    assert sig.mann_whitney(range(sig.EXACT_MAX_N + 1), [0.5]).method == "asymptotic"


def test_mann_whitney_degenerate():
    same = sig.mann_whitney([3.0] * 4, [3.0] * 4)
    assert same.p is None and same.effect.delta == 0.0
    assert sig.mann_whitney([], [1.0]).note == "a group has no values"


def test_wilcoxon_darwin_plants():
    # Fisher (1935), The Design of Experiments, Darwin's cross- and
    # self-fertilised plants (scipy.stats.wilcoxon's documentation): height
    # differences in eighths of an inch; T = 24, exact two-sided p = 0.0413
    d = [6, 8, 14, 16, 23, 24, 28, 29, 41, -48, 49, 56, 60, -67, 75]
    res = sig.wilcoxon_zero(d)
    assert res.statistic == 24 and res.p == pytest.approx(0.041259765625)


def test_wilcoxon_n_counts_the_values_tested():
    # zeros are dropped (Wilcoxon 1945's rule, scipy's zero_method="wilcox"):
    # n is the 6 nonzero values, the p their exact one (6 values, no ties:
    # T = 3, the rank of -3; 2·P(T ≤ 3) = 2·5/64 = 0.15625 by counting subsets)
    res = sig.wilcoxon_zero([0, 0, 1, 2, -3, 4, 5, 6, float("nan")])
    assert (res.n, res.zeros, res.statistic) == (6, 2, 3)
    assert res.p == pytest.approx(0.15625) and res.note == "2 zeros dropped"
    assert sig.wilcoxon_zero([0.0, 0.0]).n == 0


def test_wilcoxon_degenerate():
    assert sig.wilcoxon_zero([0.0, 0.0, 0.0]).note == "every value is 0"
    assert sig.wilcoxon_zero([]).p is None
    assert sig.wilcoxon_zero([1.0, 2.0, float("nan")]).n == 2


# Student's sleep data (Cushny & Peebles 1905, R's `sleep`): extra hours of
# sleep of 10 patients under two drugs. R: t.test(extra ~ group, data = sleep,
# paired = TRUE) gives t = -4.0621, df = 9, p-value = 0.002833.
SLEEP_DRUG_1 = [0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0]
SLEEP_DRUG_2 = [1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4]


def test_paired_t_sleep_example():
    assert sig.paired_t(np.subtract(SLEEP_DRUG_2, SLEEP_DRUG_1)) == pytest.approx(0.002833,
                                                                                abs=5e-7)


def test_paired_t_without_spread():
    assert sig.paired_t([0.0, 0.0, 0.0]) == 1.0
    assert sig.paired_t([0.2, 0.2, 0.2]) == 0.0   # the same change every pair


def test_wording():
    assert sig.p_text(0.0004) == "< 0.001" and sig.p_text(0.0123) == "0.012"
    assert sig.p_text(0.68) == "0.68" and sig.p_text(None) == "—"
    assert sig.delta_text(sig.Effect(-0.214, "small")) == "-0.21 (small)"
    assert sig.verdict(0.049) == "significant" and sig.verdict(0.05) == "not significant"
