"""What a row means, decided once (issue 31): `of(row)` gives its role,
whether it is ok, its counter's liveness verdict, whether its 95% CI holds
0 (within noise), whether it is a cost whose CI lies below 0 (baseline
drift, issue 33), whether it has too few samples for a CI (a QUICK run)
and why it is not resolved. Every table and figure of the report, the
terminal summary (results/table.py) and the gate read these answers here;
none asks the row again.

The role is the row's field (schema 3; results/runfile.py derives it for
rows of versions 1 and 2). The liveness verdict's words are
results/liveness.py's.
"""

import dataclasses

from results import liveness
from results.rows import ABOVE_NULL, MEASURED, NULL

# Fewer samples than this: the "95% CI" of results/stats.py is the min-max,
# which covers less than 95% (stats.median_ci_ranks): a QUICK run's pairs.
MIN_CI_N = 6

# Costs that cannot be negative, each a difference against a baseline
# measured beside it: a read cannot give the victim CPU time back, a sampler
# does not speed a workload up nor take wakeups or busy time from an idle
# machine, nor cost less CPU per tick than its bare timer loop. A CI wholly
# below 0 means the baseline moved while the row was measured.
NEVER_NEGATIVE = {MEASURED: {"stolen_ns_per_read", "overhead_pct", "wakeups_per_s", "busy_pct"},
                  ABOVE_NULL: {"cpu_us_per_sample"}}
DRIFT = "baseline drift, not a saving"
DRIFT_NOTE = (f"{DRIFT}: a cost that cannot be negative, whose 95% CI lies below 0: the "
              "baseline it is measured against moved while it was measured; not a finding")


@dataclasses.dataclass(frozen=True)
class Meaning:
    """What one row says. contains_zero: an ok row's 95% CI holds 0 (None:
    no CI); unresolved_note: why an ok row's median is not a finding by its
    `resolution` (its CI missed the target its experiment set, or a QUICK
    run), None when resolved or no target was set."""
    role: str = MEASURED
    ok: bool = False
    verdict: str | None = None
    contains_zero: bool | None = None
    drift: bool = False  # a NEVER_NEGATIVE cost whose CI lies below 0
    too_few: bool = False
    unresolved_note: str | None = None

    @property
    def is_null(self) -> bool:
        return self.role == NULL

    @property
    def above_null(self) -> bool:
        return self.role == ABOVE_NULL

    @property
    def dead(self) -> bool:
        """A counter that yields no energy (frozen, unit-less): its latency
        is still the route's cost."""
        return self.verdict in liveness.DEAD

    @property
    def within_noise(self) -> bool:
        """The difference is not told apart from the machine's own noise."""
        return self.contains_zero is True

    @property
    def not_resolved(self) -> bool:
        """Shown hollow, never as a finding: within noise, baseline drift,
        or too few samples."""
        return self.within_noise or self.drift or self.too_few


NOTHING = Meaning()  # of a row that is not there


def never_negative(row: dict) -> bool:
    """The row is a cost that cannot be negative (NEVER_NEGATIVE)."""
    return row["metric"] in NEVER_NEGATIVE.get(row["role"], ())


def of(row: dict | None) -> Meaning:
    """The Meaning of a row (NOTHING for None)."""
    if row is None:
        return NOTHING
    ok = row["status"] == "ok"
    lo, hi = row.get("ci95_low"), row.get("ci95_high")
    res = row.get("resolution")
    has_ci = ok and lo is not None and hi is not None
    too_few = ok and 0 < row.get("n", 0) < MIN_CI_N
    return Meaning(
        role=row["role"], ok=ok, verdict=liveness.verdict(row),
        contains_zero=lo <= 0 <= hi if has_ci else None,
        # below MIN_CI_N the "CI" is the min-max: too few pairs says it
        drift=has_ci and not too_few and hi < 0 and never_negative(row),
        too_few=too_few,
        unresolved_note=(res.get("note") or "not resolved at this n")
        if ok and res and not res.get("resolved") else None)
