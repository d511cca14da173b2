"""Reading the victim and idle steps' rows (issue 16): which rows make one
experiment, which route or mechanism and placement it is, and which latency
rows stand beside it. Pure functions of rows, no I/O, no drawing: the
victim figures (figures_victim.py) and tables (report_tables.py) share them.

The rows are results/README.md's ("The victim probe", "The idle machine"):
a row's rate, victim CPU and placement come from its `parameters`; a row
that is not ok has none, so they are read from its target ("<route target>
@ 1000 Hz; victim CPU v", "<sampler target> @ N Hz"), and a row whose
target says neither (a whole path that could not run) stands alone.
"""

import dataclasses
import re

from results import victim

from plots import labels

VICTIM, IDLE = victim.HARNESS, "idle"
STOLEN, GAP_P99, GAP_MAX = VICTIM_METRICS = victim.METRICS  # as results/victim.py writes them
WAKEUPS, BUSY, DEEP_IDLE = IDLE_METRICS = "wakeups_per_s", "busy_pct", "deep_idle_pct"
FLAT_OUT = victim.FLAT_OUT
IS_TARGET, ELSEWHERE = "victim-is-target", "victim-elsewhere"
# the latency rows a route is shown beside, in this order
LATENCY_HARNESSES = ("gbench", "criterion")

_TARGET = re.compile(rf"^(?P<route>.*?)\s*@ (?P<rate>{FLAT_OUT}|[0-9.]+ Hz)"
                     r"(?:; victim CPU (?P<victim>\d+))?$")


@dataclasses.dataclass(frozen=True)
class Where:
    """What a victim or idle row is about: its route (or mechanism), where
    it ran and, for the victim, where the victim ran. rate_hz None: flat
    out (or, with rate_known False, not said)."""
    path: str
    op: str
    route: str | None        # the route's (or sampler's) target, without rate and victim
    cpu: int | None
    target_cpu: int | None
    stand_in: str | None
    rate_hz: float | None
    rate_known: bool
    victim_cpu: int | None
    placement: str | None    # IS_TARGET, ELSEWHERE, None (not said)

    @property
    def rate_label(self) -> str:
        return victim.rate_label(self.rate_hz) if self.rate_known else "—"

    @property
    def is_sampler(self) -> bool:
        return self.path == "sampler"


def parse_target(target: str | None) -> tuple[str | None, bool, float | None, int | None]:
    """(route part, rate known, rate in Hz or None for flat out, victim CPU)
    of a victim or idle target; the route part is everything before " @ "."""
    m = _TARGET.match(target or "")
    if not m:
        return (target or None), False, None, None
    rate = None if m["rate"] == FLAT_OUT else float(m["rate"].removesuffix(" Hz"))
    victim = int(m["victim"]) if m["victim"] is not None else None
    return (m["route"] or None), True, rate, victim


def where(row: dict) -> Where:
    """The Where of a victim or idle row: its parameters where it has them,
    else what its target says."""
    route, known, rate, victim = parse_target(row.get("target"))
    params = row.get("parameters") or {}
    if "rate_hz" in params:
        known, rate = True, params["rate_hz"]
    if params.get("victim_cpu") is not None:
        victim = params["victim_cpu"]
    placement = params.get("placement")
    if placement is None and victim is not None and row["harness"] == VICTIM:
        placement = IS_TARGET if victim == row.get("target_cpu") else ELSEWHERE
    return Where(path=row["path"], op=row["op"], route=route, cpu=row.get("cpu"),
                 target_cpu=row.get("target_cpu"), stand_in=row.get("stand_in"),
                 rate_hz=None if rate is None else float(rate), rate_known=known,
                 victim_cpu=victim, placement=placement)


@dataclasses.dataclass
class Experiment:
    """The rows of one victim experiment (or one mechanism at one frequency
    on the idle machine), by metric."""
    where: Where
    rows: dict[str, dict]

    def get(self, metric: str) -> dict | None:
        return self.rows.get(metric)

    @property
    def first(self) -> dict:
        return next(iter(self.rows.values()))

    @property
    def ok(self) -> bool:
        return any(r["status"] == "ok" for r in self.rows.values())


def _nulls_last(value):
    return (value is None, value if value is not None else 0)


def route_sort_key(w: Where) -> tuple:
    """Registry order of paths (mechanisms for the sampler), then op, the
    reader on the counter's CPU before another, the victim on the target
    before elsewhere, flat out before 1 kHz."""
    return (labels.path_rank(w.path), labels.mechanism_rank(w.op) if w.is_sampler else 0, w.op,
            w.route or "", labels.PLACEMENTS.index(placement_of(w)), _nulls_last(w.cpu),
            _nulls_last(w.target_cpu), w.placement != IS_TARGET, _nulls_last(w.victim_cpu),
            not w.rate_known, w.rate_hz is not None, w.rate_hz or 0)


def placement_of(w: Where) -> str:
    """The reader's placement as the latency figures name it: same CPU,
    other CPU, not per-CPU."""
    return labels.placement({"cpu": w.cpu, "target_cpu": w.target_cpu})


def experiments(rows: list[dict], harness: str) -> list[Experiment]:
    """The experiments of one run's `harness` rows (victim or idle), sorted."""
    groups: list[Experiment] = []
    for r in rows:
        if r["harness"] != harness:
            continue
        w = where(r)
        # rows that say no more than each other (not ok, target null: a rate
        # that failed before the sampler named its counters) stay apart
        same = next((e for e in groups if e.where == w and r["metric"] not in e.rows), None)
        if same is None:
            groups.append(Experiment(w, {r["metric"]: r}))
        else:
            same.rows[r["metric"]] = r
    return sorted(groups, key=lambda e: route_sort_key(e.where))


def victim_experiments(rows: list[dict], sampler: bool) -> list[Experiment]:
    """The victim experiments: the routes (sampler False) or the sampler
    mechanisms as neighbours (True)."""
    return [e for e in experiments(rows, VICTIM) if e.where.is_sampler == sampler]


def idle_experiments(rows: list[dict]) -> list[Experiment]:
    return experiments(rows, IDLE)


def route_key(w: Where) -> tuple:
    """A route in one victim placement, whatever the rate: one row of the
    victim figure."""
    return (w.path, w.op, w.route, w.cpu, w.target_cpu, w.stand_in, w.victim_cpu, w.placement)


def latency_rows(rows: list[dict], w: Where) -> dict[str, dict]:
    """{harness: latency row} of the reader-side latency rows of the route a
    victim row reads: same path, op, CPU, target CPU and target (the
    victim target's route part, before " @ "), in the target state the
    victim puts the target in where rows have states (issue 34): busy when
    the victim spins on the target CPU, idle when it spins elsewhere."""
    state = "busy" if w.placement == IS_TARGET else "idle"
    found: dict[str, list[dict]] = {}
    for r in rows:
        if (r["metric"] == "latency" and r["harness"] in LATENCY_HARNESSES
                and r["path"] == w.path and r["op"] == w.op and r.get("cpu") == w.cpu
                and r.get("target_cpu") == w.target_cpu and r.get("target") == w.route):
            found.setdefault(r["harness"], []).append(r)
    pick = {h: min(rs, key=lambda r: r.get("target_state") not in (None, state))
            for h, rs in found.items()}
    return {h: pick[h] for h in LATENCY_HARNESSES if h in pick}


def baseline(row: dict | None):
    """The no-neighbour (no-sampler) median a row's value is read against."""
    if row is None or row["status"] != "ok":
        return None
    return (row.get("parameters") or {}).get("baseline_median")


def reads_per_s(e: Experiment):
    values = ((r.get("parameters") or {}).get("reads_per_s") for r in e.rows.values())
    return next((v for v in values if v is not None), None)


def victim_label(w: Where) -> str:
    """"victim on CPU 0, the target" / "victim on CPU 1" / "victim CPU not said"."""
    if w.victim_cpu is None:
        return "victim CPU not said"
    if w.placement == IS_TARGET:
        return f"victim on CPU {w.victim_cpu}, the target"
    return f"victim on CPU {w.victim_cpu}"
