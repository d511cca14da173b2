"""The gate's statistics and decisions: the comparison of two rows' samples
(the change of the medians; Mann-Whitney U and Cliff's delta from
results/significance.py), the rules per metric and the decision on one row
(ci/gate.py has the contract, ci/README.md the rationale, ci/gate.toml the
defaults).
"""

import dataclasses
import math

import numpy as np

from results import rows as rowlib
from results import significance as sig

# Interleaved rounds (several runs a side, ci/ab): fewer paired rounds than
# this and a row is not compared. With 3 the paired t interval has 2 degrees
# of freedom (t = 9.9 at alpha 0.01): only a change far beyond the rounds'
# spread shows; ci/ab's default is 10 rounds.
MIN_ROUNDS = 3

# Per metric: which direction is worse, and what its samples are, which
# decides the test (ci/README.md, "A test per metric"). PAIRS are
# differences near 0, whose relative change means nothing: judged in the
# metric's unit.
HIGHER, LOWER = "higher", "lower"
REPETITIONS, WINDOWS, PAIRS = "repetitions", "windows", "pairs"
METRICS = {  # metric: (worse when, samples are)
    "latency": (HIGHER, REPETITIONS),
    "cycles": (HIGHER, REPETITIONS),
    "rate_hz": (LOWER, WINDOWS),
    "jitter_us": (HIGHER, WINDOWS),
    "missed_ticks": (HIGHER, WINDOWS),
    "overhead_pct": (HIGHER, PAIRS),
    "cpu_us_per_sample": (HIGHER, WINDOWS),
    "stolen_ns_per_read": (HIGHER, PAIRS),
    "victim_gap_p99_ns": (HIGHER, WINDOWS),
    "victim_gap_max_ns": (HIGHER, WINDOWS),
    "wakeups_per_s": (HIGHER, PAIRS),
    "busy_pct": (HIGHER, PAIRS),
    "deep_idle_pct": (LOWER, PAIRS),   # less time in the deepest C-state: more power
}
assert METRICS.keys() == rowlib.METRIC_UNITS.keys()
WORSE_WHEN = {metric: worse for metric, (worse, _) in METRICS.items()}
SAMPLES_ARE = {metric: samples for metric, (_, samples) in METRICS.items()}

# Built-in settings per metric, over the defaults (ci/gate.toml's
# [metrics.M] overrides them key by key); why each: ci/README.md, "A test
# per metric". min_effect 0.474 is |Cliff's delta| "large".
METRIC_RULES = {
    "jitter_us": {"threshold_pct": 200.0, "threshold_abs": 5.0, "min_effect": 0.474},
    "missed_ticks": {"threshold_pct": 100.0, "threshold_abs": 5.0, "min_effect": 0.474},
    "cpu_us_per_sample": {"threshold_pct": 25.0, "threshold_abs": 2.0, "min_effect": 0.474},
    "overhead_pct": {"threshold_pct": 0.0, "threshold_abs": 3.0},
    "stolen_ns_per_read": {"threshold_pct": 100.0, "threshold_abs": 2000.0},
    # compared and listed, never gated (not_gated_why, GAP_METRICS)
    "victim_gap_p99_ns": {"threshold_pct": 100.0, "threshold_abs": 5000.0, "min_effect": 0.474},
    "victim_gap_max_ns": {"threshold_pct": 200.0, "threshold_abs": 50000.0, "min_effect": 0.474},
    "wakeups_per_s": {"threshold_pct": 0.0, "threshold_abs": 200.0},
    "busy_pct": {"threshold_pct": 0.0, "threshold_abs": 1.0},
    "deep_idle_pct": {"threshold_pct": 0.0, "threshold_abs": 5.0},
}

# The sampler's "above null" rows (the sampler minus its null timer): the
# sampler's cost is gated on these, its floor is not (not_gated_why); why:
# ci/README.md, "A test per metric".
ABOVE_NULL_RULES = {
    "cpu_us_per_sample": {"threshold_pct": 0.0, "threshold_abs": 4.0, "min_effect": 0.0},
    "rate_hz": {"threshold_pct": 0.0, "threshold_abs": 10.0, "min_effect": 0.0},
}


# The victim's gap percentiles measure the host more than the code
# (ci/README.md, "A test per metric").
GAP_METRICS = ("victim_gap_p99_ns", "victim_gap_max_ns")


def not_gated_why(row) -> str | None:
    """Why a row is compared but never fails the gate, or None: the rows
    that measure the machine's floor rather than the code (above)."""
    if row["metric"] in GAP_METRICS:
        return ("the victim's gap percentiles: the host's preemptions, reported, not gated; "
                "the cost is gated on stolen_ns_per_read")
    if row["path"] != "sampler":
        return None
    if row["role"] == rowlib.NULL:
        return "the null timer: the machine's floor, reported, not gated"
    if row["role"] == rowlib.MEASURED and row["metric"] == "cpu_us_per_sample":
        return ("the machine's floor plus the sampler's work: the sampler's cost is "
                "gated on its `above null` row")
    return None


# ---- decisions --------------------------------------------------------------

REGRESSION = "regression"
MISSING = "missing"
ALLOWED_MISSING = "allowed-missing"
IMPROVEMENT = "improvement"
UNCHANGED = "unchanged"
TOO_FEW_SAMPLES = "too-few-samples"
OTHER_MACHINE = "other-machine"
NEW = "new"
STEP_NOT_RUN = "step-not-run"  # its step ran in the baseline only (--allow-mode-mismatch)
NOT_GATED = "not-gated"
SKIPPED_REFERENCE = "skipped-reference"
SKIPPED_NOT_OK = "skipped-not-ok"
# The order of the report; the first two fail the gate.
DECISIONS = (REGRESSION, MISSING, ALLOWED_MISSING, IMPROVEMENT, TOO_FEW_SAMPLES,
             OTHER_MACHINE, STEP_NOT_RUN, UNCHANGED, NOT_GATED, NEW, SKIPPED_NOT_OK, SKIPPED_REFERENCE)
FAILING = frozenset({REGRESSION, MISSING})


@dataclasses.dataclass(frozen=True)
class Rule:
    """The settings that decide one row (ci/gate.toml [defaults], then the
    overrides of [metrics.M], [paths.P], [cross_cpu] and [rows."glob"])."""
    alpha: float
    threshold_pct: float
    min_samples: int
    threshold_abs: float = 0.0   # and worse by more than this, in the row's unit
    min_effect: float = 0.0      # and |Cliff's delta| at least this


@dataclasses.dataclass(frozen=True)
class Comparison:
    """Baseline samples against current samples."""
    n_baseline: int
    n_current: int
    median_baseline: float
    median_current: float
    change_pct: float      # (current - baseline) / |baseline| * 100; ±inf from a 0 median
    p_value: float         # two-sided Mann-Whitney U (rounds: paired t)
    cliffs_delta: float    # P(current > baseline) - P(current < baseline)
    # Interleaved rounds only (compare_rounds): how many paired rounds, and
    # the 1 - alpha confidence interval of change_pct (ratio metrics) or of
    # the current - baseline difference in the row's unit (PAIRS metrics).
    rounds: int = 0
    ci: tuple | None = None
    by_ratio: bool = False  # ci is of change_pct (True) or of the difference (False)
    shift: float | None = None  # the change in the row's unit (rounds: as change_pct says)


def change_pct(median_baseline: float, median_current: float) -> float:
    """Relative change of the median in percent of |baseline|; from a 0
    baseline median any change is infinite (and none is 0)."""
    if median_baseline == 0:
        return 0.0 if median_current == 0 else math.copysign(math.inf, median_current)
    return (median_current - median_baseline) / abs(median_baseline) * 100.0


def worse_pct(metric: str, change: float) -> float:
    """The change oriented so that positive is worse for this metric."""
    return change if WORSE_WHEN[metric] == HIGHER else -change


def compare(baseline, current) -> Comparison:
    """Every statistic the gate reports for one pair of rows' samples."""
    mb, mc = float(np.median(baseline)), float(np.median(current))
    test = sig.mann_whitney(current, baseline)
    return Comparison(n_baseline=len(baseline), n_current=len(current),
                      median_baseline=mb, median_current=mc,
                      change_pct=change_pct(mb, mc),
                      # every value the same on both sides: no evidence of a difference
                      p_value=1.0 if test.p is None else test.p,
                      cliffs_delta=test.effect.delta)


def compare_rounds(baseline, current, metric: str, rule: Rule) -> Comparison:
    """Interleaved rounds: baseline[i] and current[i] are one row's value
    (its median) in round i of each side, measured back to back; why the
    round is the unit: ci/README.md, "Interleaved rounds". Ratio metrics are
    judged on log(current / baseline) per round: change_pct is the geometric
    mean ratio's change, its CI a paired t interval. PAIRS metrics (values
    near 0), rows whose rule has no threshold_pct (judged in their unit
    only) and any value <= 0 are judged on the difference current - baseline
    in the metric's unit. The CI is at 1 - rule.alpha. Cliff's delta is over
    the rounds' values."""
    b = np.asarray(baseline, dtype=float)
    c = np.asarray(current, dtype=float)
    if b.size != c.size or b.size < 2:
        raise ValueError("compare_rounds needs the same number (>= 2) of rounds a side")
    mb, mc = float(np.median(b)), float(np.median(c))
    by_ratio = (SAMPLES_ARE[metric] != PAIRS and rule.threshold_pct > 0
                and bool(np.all(b > 0) and np.all(c > 0)))
    d = np.log(c) - np.log(b) if by_ratio else c - b
    half = sig.t_half_width(d, 1 - rule.alpha)
    mean = float(d.mean())
    if by_ratio:
        change = (math.exp(mean) - 1) * 100
        ci = ((math.exp(mean - half) - 1) * 100, (math.exp(mean + half) - 1) * 100)
        shift = mb * change / 100
    else:
        change = change_pct(mb, mb + mean)  # the mean difference, relative to |baseline|
        ci = (mean - half, mean + half)
        shift = mean
    return Comparison(n_baseline=b.size, n_current=c.size, median_baseline=mb,
                      median_current=mc, change_pct=change, p_value=sig.paired_t(d),
                      cliffs_delta=sig.cliffs_delta(c, b).delta, rounds=int(d.size), ci=ci,
                      by_ratio=by_ratio, shift=shift)


def decide(c: Comparison, metric: str, rule: Rule) -> tuple[str, str]:
    """(decision, why) for one compared pair: REGRESSION when significant,
    worse by more than threshold_pct percent and by more than threshold_abs
    in the row's unit, with |Cliff's delta| >= min_effect; IMPROVEMENT when
    the same holds for better; UNCHANGED otherwise (why says which part was
    missing); TOO_FEW_SAMPLES below min_samples (interleaved rounds: below
    MIN_ROUNDS rounds; min_effect does not apply, the paired t test already
    weighs the change against the rounds' spread)."""
    if c.rounds:
        if c.rounds < MIN_ROUNDS:
            return TOO_FEW_SAMPLES, (f"{c.rounds} paired rounds, fewer than "
                                     f"{MIN_ROUNDS}")
        rule = dataclasses.replace(rule, min_effect=0.0)
    elif min(c.n_baseline, c.n_current) < rule.min_samples:
        return TOO_FEW_SAMPLES, (f"{c.n_baseline} vs {c.n_current} samples, "
                                 f"fewer than min_samples = {rule.min_samples}")
    significant = c.p_value < rule.alpha
    worse = worse_pct(metric, c.change_pct)
    shift = c.median_current - c.median_baseline if c.shift is None else c.shift
    beyond = abs(worse) > rule.threshold_pct and abs(shift) > rule.threshold_abs
    large = abs(c.cliffs_delta) >= rule.min_effect
    if significant and beyond and large:
        return (REGRESSION if worse > 0 else IMPROVEMENT), ""
    within = f"±{rule.threshold_pct:g}%" + (f" or ±{rule.threshold_abs:g}"
                                           if rule.threshold_abs else "")
    if significant and not beyond:
        return UNCHANGED, f"significant but within {within}"
    if significant:
        return UNCHANGED, (f"significant and beyond {within}, but Cliff's |δ| = "
                           f"{abs(c.cliffs_delta):.2f} < min_effect {rule.min_effect:g}")
    if beyond:
        return UNCHANGED, f"beyond {within} but not significant (p ≥ {rule.alpha:g})"
    return UNCHANGED, ""


@dataclasses.dataclass
class Result:
    """The decision on one row (the baseline's, or the current's for NEW)."""
    row: dict
    decision: str
    why: str = ""
    rule: Rule | None = None
    comparison: Comparison | None = None
    current: dict | None = None

    @property
    def fails(self) -> bool:
        return self.decision in FAILING


# ---- the run as a whole -----------------------------------------------------

# A latency row "moved with the run" when its ratio is within this factor of
# its harness's whole-run shift.
WITH_THE_RUN = 0.05


@dataclasses.dataclass(frozen=True)
class Shift:
    """How one harness's latency rows moved as a whole: the median over its
    compared rows of current / baseline median, and how many rows lie within
    WITH_THE_RUN of it."""
    factor: float
    following: int
    rows: int

    def is_whole_run(self, threshold_pct: float) -> bool:
        """Beyond the threshold, with at least half the rows moving together:
        what a host slower (or faster) for the whole step looks like, and
        also a change that slows every path alike. One pair of runs cannot
        tell the two apart (ci/README.md, "Is the gate quiet?"). Fewer
        than 4 rows cannot show a common move apart from a few rows that
        regressed together."""
        return (abs(self.factor - 1) * 100 > threshold_pct
                and self.following * 2 >= self.rows >= 4)


def run_shifts(results) -> dict:
    """harness -> Shift of its compared latency rows (Result objects)."""
    ratios = {}
    for r in results:
        c = r.comparison
        if c is None or r.row["metric"] != "latency" or c.median_baseline <= 0:
            continue
        ratios.setdefault(r.row["harness"], []).append(c.median_current / c.median_baseline)
    shifts = {}
    for harness, rs in sorted(ratios.items()):
        factor = float(np.median(rs))
        following = sum(abs(x / factor - 1) <= WITH_THE_RUN for x in rs)
        shifts[harness] = Shift(factor, following, len(rs))
    return shifts
