"""The performance gate: did an access path get slower than in a baseline run?

    ci/gate [--baseline B] [--current C] [--config ci/gate.toml]
            [--summary FILE] [--verdict FILE] [--alpha A] [--threshold-pct T]
            [--min-samples N] [--cross-machine]
    ci/gate --store-baseline [--current C] [--baseline B]

B and C are a run directory of `make bench-all` (its results.jsonl is used)
or a results.jsonl. Defaults: B = results/baseline/results.jsonl (what
`make baseline` stores), C = results/runs/latest.

Contract (ci/README.md has the rationale):

- Rows pair on the machine (the [machine] identity fields of ci/gate.toml)
  and KEY_FIELDS. `reference` rows, and rows not ok in the baseline, are
  skipped and counted.
- For each pair of ok rows: a two-sided Mann-Whitney U test on `samples`,
  the change of the medians and Cliff's delta. A row REGRESSES when
  p < alpha AND its median is worse (WORSE_WHEN: higher or lower, by
  metric) by more than threshold_pct; it IMPROVES when p < alpha and it is
  better by more than threshold_pct; otherwise it is unchanged. Rows with
  fewer than min_samples samples on either side are not compared.
  alpha, threshold_pct and min_samples: the defaults below, overridden per
  metric, per path, for cross-CPU reads and per row id (Config.rule_for).
- A baseline row that is absent from the current run, no longer ok, or
  flipped between a stand-in and the real thing is MISSING, unless an
  [allow] missing pattern matches its id (`row_id`).
- A counter live in the baseline and frozen or unit-less now (the liveness
  verdict of schema 2) DIED: it fails the gate unless [liveness]
  counter_died = "warn" (ci/gate_liveness.py). Rows of schema 1 have no
  verdict ("unknown") and pair all the same: the verdict is not in the key.
- The gate fails on any regression, (not allowed) missing row or dead counter.

Outputs: Markdown on stdout (also to --summary FILE and appended to
$GITHUB_STEP_SUMMARY when set), a JSON verdict (--verdict, default
gate-verdict.json next to the current results.jsonl).
Exit status: 0 pass, 1 fail, 2 usage or input error (a message on stderr
naming the file and the problem, `file:line: field: message` for bad rows).
"""

import argparse
import dataclasses
import fnmatch
import json
import math
import os
import shutil
import sys
import tomllib
from pathlib import Path

import numpy as np
from scipy.stats import mannwhitneyu

from ci import gate_liveness
from results import rows as rowlib
from results import registry, runfile, schema, table

REPO = Path(__file__).resolve().parent.parent
DEFAULT_BASELINE = REPO / "results" / "baseline" / "results.jsonl"
DEFAULT_CURRENT = REPO / "results" / "runs" / "latest"
DEFAULT_CONFIG = REPO / "ci" / "gate.toml"
VERDICT_NAME = "gate-verdict.json"
VERDICT_VERSION = 1

EXIT_PASS, EXIT_FAIL, EXIT_USAGE = 0, 1, 2

# ---- statistical defaults: the only place they are set ----------------------

# Two-sided Mann-Whitney U significance level. 0.01 rather than 0.05: a CI
# gate runs on every push and compares tens of rows each time, so a false
# alarm rate of 1 in 100 rows per run is already the most a team tolerates.
ALPHA = 0.01
# The median must move by more than this (percent of the baseline median)
# to count. Within-run repetitions underestimate run-to-run noise (a VM's
# neighbours, frequency, cache state between runs); on the development VMs two
# QUICK runs differ by a few percent per row, so 10% stays clear of that.
THRESHOLD_PCT = 10.0
# Fewer samples than this on either side: not compared. The design asks for
# at least 10 repetitions; with 5 against 5 the U test can reach p < 0.01
# only when the two samples do not overlap at all (2 / C(10, 5) = 0.0079).
MIN_SAMPLES = 10

# Which direction of a metric is worse (one table, every metric of the schema).
HIGHER, LOWER = "higher", "lower"
WORSE_WHEN = {
    "latency": HIGHER,
    "cycles": HIGHER,
    "rate_hz": LOWER,
    "jitter_us": HIGHER,
    "missed_ticks": HIGHER,
    "overhead_pct": HIGHER,
    "cpu_us_per_sample": HIGHER,
}
assert WORSE_WHEN.keys() == rowlib.METRIC_UNITS.keys()

# Cliff's delta magnitude thresholds (Romano et al. 2006, from Cohen's d of
# 0.2 / 0.5 / 0.8 under normality): below 0.147 negligible, then small,
# medium, and large from 0.474.
CLIFF_MAGNITUDES = ((0.147, "negligible"), (0.33, "small"), (0.474, "medium"))

# What a row is, apart from its machine: rows pair on these fields.
KEY_FIELDS = ("harness", "path", "op", "target", "cpu", "target_cpu", "metric")

# The machine of a row: by default the same runner (hostname) with the same
# CPU under the same hypervisor. Kernel, microcode and mitigations are not
# part of it: their changes are what the gate is there to catch (they are
# reported as environment changes). See [machine] in ci/gate.toml.
MACHINE_FIELDS = tuple(schema.SCHEMA["$defs"]["machine"]["properties"])
IDENTITY = ("hostname", "cpu_vendor", "cpu_family", "cpu_model", "cpu_stepping",
            "cpu_model_name", "hypervisor")
IDENTITY_CHOICES = tuple(f for f in MACHINE_FIELDS if f != "mitigations")
# tsc_khz is recalibrated at every boot of a VM; smaller moves are not news.
TSC_KHZ_TOLERANCE = 0.001

PATHS = registry.PATHS

# ---- decisions --------------------------------------------------------------

REGRESSION = "regression"
MISSING = "missing"
ALLOWED_MISSING = "allowed-missing"
IMPROVEMENT = "improvement"
UNCHANGED = "unchanged"
TOO_FEW_SAMPLES = "too-few-samples"
OTHER_MACHINE = "other-machine"
NEW = "new"
SKIPPED_REFERENCE = "skipped-reference"
SKIPPED_NOT_OK = "skipped-not-ok"
# The order of the report; the first two fail the gate.
DECISIONS = (REGRESSION, MISSING, ALLOWED_MISSING, IMPROVEMENT, TOO_FEW_SAMPLES,
             OTHER_MACHINE, UNCHANGED, NEW, SKIPPED_NOT_OK, SKIPPED_REFERENCE)
FAILING = frozenset({REGRESSION, MISSING})


class InputError(Exception):
    """A usage or input problem (exit 2). The message names the file."""


@dataclasses.dataclass(frozen=True)
class Rule:
    """The settings that decide one row (ci/gate.toml [defaults], then the
    overrides of [metrics.M], [paths.P], [cross_cpu] and [rows."glob"])."""
    alpha: float = ALPHA
    threshold_pct: float = THRESHOLD_PCT
    min_samples: int = MIN_SAMPLES


@dataclasses.dataclass(frozen=True)
class Comparison:
    """Baseline samples against current samples."""
    n_baseline: int
    n_current: int
    median_baseline: float
    median_current: float
    change_pct: float      # (current - baseline) / |baseline| * 100; ±inf from a 0 median
    p_value: float         # two-sided Mann-Whitney U
    cliffs_delta: float    # P(current > baseline) - P(current < baseline)


def cliffs_delta(baseline, current) -> float:
    """Cliff's delta: P(C > B) - P(C < B) over every pair (b, c), in [-1, 1].
    +1: every current sample is above every baseline sample; 0: the two
    samples are interleaved (or identical). Ties count for neither side."""
    b = np.sort(np.asarray(baseline, dtype=float))
    c = np.asarray(current, dtype=float)
    if b.size == 0 or c.size == 0:
        raise ValueError("Cliff's delta needs two non-empty samples")
    below = np.searchsorted(b, c, side="left")            # baseline samples < c
    above = b.size - np.searchsorted(b, c, side="right")  # baseline samples > c
    return float((below.sum() - above.sum()) / (b.size * c.size))


def cliffs_magnitude(delta: float) -> str:
    """negligible / small / medium / large (CLIFF_MAGNITUDES)."""
    return next((label for limit, label in CLIFF_MAGNITUDES if abs(delta) < limit), "large")


def mann_whitney_p(baseline, current) -> float:
    """Two-sided Mann-Whitney U p-value (scipy's choice of exact or normal
    approximation with tie and continuity corrections). When every sample of
    both sides is the same value there is no evidence of a difference: 1.0
    (scipy may return NaN there, the tie-corrected variance being 0)."""
    b = np.asarray(baseline, dtype=float)
    c = np.asarray(current, dtype=float)
    if np.all(b == b[0]) and np.all(c == b[0]):
        return 1.0
    p = float(mannwhitneyu(c, b, alternative="two-sided").pvalue)
    return 1.0 if math.isnan(p) else min(p, 1.0)


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
    return Comparison(n_baseline=len(baseline), n_current=len(current),
                      median_baseline=mb, median_current=mc,
                      change_pct=change_pct(mb, mc),
                      p_value=mann_whitney_p(baseline, current),
                      cliffs_delta=cliffs_delta(baseline, current))


def decide(c: Comparison, metric: str, rule: Rule) -> tuple[str, str]:
    """(decision, why) for one compared pair: REGRESSION when significant and
    worse by more than the threshold, IMPROVEMENT when significant and better
    by more than it, UNCHANGED otherwise; TOO_FEW_SAMPLES below min_samples."""
    if min(c.n_baseline, c.n_current) < rule.min_samples:
        return TOO_FEW_SAMPLES, (f"{c.n_baseline} vs {c.n_current} samples, "
                                 f"fewer than min_samples = {rule.min_samples}")
    significant = c.p_value < rule.alpha
    worse = worse_pct(metric, c.change_pct)
    beyond = abs(worse) > rule.threshold_pct
    if significant and beyond:
        return (REGRESSION if worse > 0 else IMPROVEMENT), ""
    if significant:
        return UNCHANGED, f"significant but within ±{rule.threshold_pct:g}%"
    if beyond:
        return UNCHANGED, (f"beyond ±{rule.threshold_pct:g}% but not significant "
                           f"(p ≥ {rule.alpha:g})")
    return UNCHANGED, ""


def is_cross_cpu(row) -> bool:
    """Does the row read another CPU's counter (an IPI on the msr, powercap
    and perf routes)?"""
    return row["cpu"] is not None and row["target_cpu"] is not None \
        and row["cpu"] != row["target_cpu"]


def is_allowed(row_id_: str, patterns) -> bool:
    """Does an [allow] missing pattern (fnmatch, case-sensitive) match this id?"""
    return any(fnmatch.fnmatchcase(row_id_, p) for p in patterns)


# ---- naming rows ---------------------------------------------------------------

def row_id(row) -> str:
    """The id that [allow] missing and [rows] patterns match:
    path/op/target/cpu>target_cpu/metric/harness with "-" for a null, e.g.
    "msr-dev/pread/0x611/1>0/latency/gbench", "powercap/pread/<file>/0>-/latency/gbench"."""
    def text(v):
        return "-" if v is None else str(v)
    return "/".join((row["path"], row["op"], text(row["target"]),
                     f"{text(row['cpu'])}>{text(row['target_cpu'])}", row["metric"],
                     row["harness"]))


def label(row) -> str:
    """A row for people, as in the latency table: "msr-dev pread 0x611 1→0
    latency (gbench)"; a lone CPU number when the counter belongs to no CPU."""
    parts = [row["path"], row["op"], table.shorten(row["target"]) if row["target"] else None,
             table.cpus(row, none=None), row["metric"]]
    return " ".join(p for p in parts if p) + f" ({row['harness']})"


# ---- configuration -------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Config:
    """ci/gate.toml, validated."""
    defaults: Rule = Rule()
    metrics: dict = dataclasses.field(default_factory=dict)  # metric -> partial Rule
    paths: dict = dataclasses.field(default_factory=dict)    # path -> partial Rule
    cross_cpu: dict = dataclasses.field(default_factory=dict)  # partial Rule
    rows: tuple = ()   # ((row id pattern, partial Rule), ...) in file order
    allow_missing: tuple = ()
    identity: tuple = IDENTITY
    cross_machine: bool = False
    counter_died: str = gate_liveness.COUNTER_DIED  # "fail" or "warn"
    source: str | None = None   # the file it came from

    def rule_for(self, row) -> Rule:
        """[defaults], overridden key by key by [metrics.<metric>], then
        [paths.<path>], then [cross_cpu] (for a row reading another CPU's
        counter), then every [rows."<pattern>"] matching its id, in file
        order: the last setting of a key wins."""
        layers = [self.metrics.get(row["metric"], {}), self.paths.get(row["path"], {})]
        if is_cross_cpu(row):
            layers.append(self.cross_cpu)
        rid = row_id(row)
        layers += [rule for pattern, rule in self.rows if fnmatch.fnmatchcase(rid, pattern)]
        merged = {}
        for layer in layers:
            merged.update(layer)
        return dataclasses.replace(self.defaults, **merged)


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _check_rule_value(key: str, v):
    """None if v is a valid value of a Rule field, else the complaint."""
    if key == "alpha":
        return None if _is_number(v) and 0 < v < 1 \
            else "must be a number between 0 and 1 (exclusive)"
    if key == "threshold_pct":
        return None if _is_number(v) and v >= 0 else "must be a number ≥ 0 (percent)"
    if key == "min_samples":
        return None if isinstance(v, int) and not isinstance(v, bool) and v >= 1 \
            else "must be an integer ≥ 1"
    raise AssertionError(key)


RULE_KEYS = tuple(f.name for f in dataclasses.fields(Rule))
SECTIONS = ("defaults", "metrics", "paths", "cross_cpu", "rows", "allow", "machine", "liveness")


def parse_config(doc: dict, source: str) -> Config:
    """Validate a parsed ci/gate.toml. InputError "<source>: <key>: <problem>"
    on the first unknown key or bad value."""
    def fail(key, problem):
        raise InputError(f"{source}: {key}: {problem}")

    def known(keys):
        return "known: " + ", ".join(keys)

    def table_of(key, value):
        if not isinstance(value, dict):
            fail(key, "must be a table")
        return value

    def rule(key, value) -> dict:
        for k, v in table_of(key, value).items():
            if k not in RULE_KEYS:
                fail(f"{key}.{k}", f"unknown key ({known(RULE_KEYS)})")
            problem = _check_rule_value(k, v)
            if problem:
                fail(f"{key}.{k}", problem)
        return dict(value)

    for section in doc:
        if section not in SECTIONS:
            fail(section, f"unknown section ({known(SECTIONS)})")
    defaults = Rule(**rule("defaults", doc.get("defaults", {})))
    metrics, paths = {}, {}
    for name, choices, out in (("metrics", tuple(WORSE_WHEN), metrics), ("paths", PATHS, paths)):
        for k, v in table_of(name, doc.get(name, {})).items():
            if k not in choices:
                fail(f"{name}.{k}", f"unknown {name[:-1]} ({known(choices)})")
            out[k] = rule(f"{name}.{k}", v)
    cross_cpu = rule("cross_cpu", doc.get("cross_cpu", {}))
    row_rules = []
    for pattern, v in table_of("rows", doc.get("rows", {})).items():
        if not pattern:
            fail("rows", "an empty pattern")
        row_rules.append((pattern, rule(f'rows."{pattern}"', v)))

    allow = table_of("allow", doc.get("allow", {}))
    for k in allow:
        if k != "missing":
            fail(f"allow.{k}", f"unknown key ({known(['missing'])})")
    missing = allow.get("missing", [])
    if not isinstance(missing, list) or not all(isinstance(p, str) and p for p in missing):
        fail("allow.missing", "must be a list of non-empty strings (patterns of row ids)")

    machine = table_of("machine", doc.get("machine", {}))
    for k in machine:
        if k not in ("identity", "cross_machine"):
            fail(f"machine.{k}", f"unknown key ({known(['identity', 'cross_machine'])})")
    identity = machine.get("identity", list(IDENTITY))
    if not isinstance(identity, list) or not identity:
        fail("machine.identity", "must be a non-empty list of machine fields "
                                 "(to compare any machines, set cross_machine = true)")
    for f in identity:
        if f not in IDENTITY_CHOICES:
            fail("machine.identity", f"unknown machine field {f!r} ({known(IDENTITY_CHOICES)})")
    if len(set(identity)) != len(identity):
        fail("machine.identity", "lists a field twice")
    cross = machine.get("cross_machine", False)
    if not isinstance(cross, bool):
        fail("machine.cross_machine", "must be true or false")
    live = table_of("liveness", doc.get("liveness", {}))
    for k in live:
        if k != "counter_died":
            fail(f"liveness.{k}", f"unknown key ({known(['counter_died'])})")
    died = live.get("counter_died", gate_liveness.COUNTER_DIED)
    if died not in gate_liveness.POLICIES:
        fail("liveness.counter_died", f"must be one of {', '.join(map(repr, gate_liveness.POLICIES))}")
    return Config(defaults=defaults, metrics=metrics, paths=paths, cross_cpu=cross_cpu,
                  rows=tuple(row_rules), allow_missing=tuple(missing),
                  identity=tuple(identity), cross_machine=cross, counter_died=died,
                  source=source)


def load_config(path: Path | None, required: bool) -> Config:
    """The config at `path`; the built-in defaults when it is absent and not
    `required` (the default file, not one given on the command line)."""
    if path is None or (not required and not path.exists()):
        return Config()
    shown = display(path)
    try:
        with open(path, "rb") as f:
            doc = tomllib.load(f)
    except OSError as e:
        raise InputError(f"{shown}: cannot read: {e.strerror or e}") from None
    except tomllib.TOMLDecodeError as e:
        raise InputError(f"{shown}: not valid TOML: {e}") from None
    return parse_config(doc, shown)


# ---- runs --------------------------------------------------------------------------

@dataclasses.dataclass
class Run:
    """One results.jsonl, validated: rows with their line numbers."""
    file: Path
    rows: list  # [(line_no, row)]

    @property
    def run_ids(self) -> list:
        return sorted({r["run_id"] for _, r in self.rows})

    def describe(self) -> dict:
        ts = sorted({r["timestamp"] for _, r in self.rows})
        return {"file": display(self.file), "run_ids": self.run_ids,
                "timestamps": ts, "rows": len(self.rows)}


def display(path) -> str:
    """A path as short as it is unambiguous: relative to the working directory
    when under it."""
    p = Path(path)
    try:
        return str(p.absolute().relative_to(Path.cwd()))
    except ValueError:
        return str(p)


def results_file(arg, role: str, hint: str = "") -> Path:
    """The results.jsonl that `arg` (a run directory or a file) names."""
    return runfile.locate(arg, role=role, hint=hint, show=display)


def load_run(path: Path) -> Run:
    """Validate a results.jsonl against the schema and read its rows.
    RunFileError listing every bad row as `file:line: field: message`."""
    loaded = runfile.load(path, show=display)
    return Run(file=loaded.path, rows=list(loaded.lines))


def identity_of(row, fields) -> tuple:
    return tuple((f, row["machine"][f]) for f in fields)


def _describe_identity(ident: tuple) -> str:
    return ", ".join(f"{f}={v!r}" for f, v in ident) or "(any machine)"


def _index(run: Run, fields) -> dict:
    """{(machine identity, key): (line, row)} of the run's measured rows
    (every harness but `reference`); InputError on two rows with one key."""
    index = {}
    for line, row in run.rows:
        if row["harness"] == "reference":
            continue
        k = (identity_of(row, fields), tuple(row[f] for f in KEY_FIELDS))
        if k in index:
            raise InputError(
                f"{display(run.file)}:{line}: (row): same machine and key as line {index[k][0]} "
                f"({row_id(row)}): the gate cannot tell which to compare"
                + ("" if fields else "; with cross-machine comparison, rows of different "
                                     "machines collide: gate one machine at a time"))
        index[k] = (line, row)
    return index


def _machine_mismatch(baseline: Run, current: Run, b_ids, c_ids, config: Config) -> str:
    def diff(a: tuple, b: tuple):
        return [f"{f}: {va!r} (baseline) vs {vb!r} (current)"
                for (f, va), (_, vb) in zip(a, b) if va != vb]
    b, c = sorted(b_ids, key=repr)[0], sorted(c_ids, key=repr)[0]
    where = config.source or "the built-in [machine] identity"
    return "\n".join([
        f"{display(baseline.file)}: the baseline was measured on another machine than "
        f"{display(current.file)}:",
        *("  " + d for d in diff(b, c)),
        "The gate compares a run only with a baseline from the same machine "
        f"(identity fields: {', '.join(config.identity)}; {where}).",
        "Store a baseline on this machine (make baseline), or compare anyway with "
        "--cross-machine (or [machine] cross_machine = true in ci/gate.toml)."])


def environment_changes(b_machine: dict, c_machine: dict, fields) -> list[dict]:
    """[{field, baseline, current}] for the machine fields that differ
    (mitigations: one entry per changed vulnerability)."""
    changes = []
    for f in fields:
        vb, vc = b_machine.get(f), c_machine.get(f)
        if f == "mitigations" and isinstance(vb, dict) and isinstance(vc, dict):
            for k in sorted(vb.keys() | vc.keys()):
                if vb.get(k) != vc.get(k):
                    changes.append({"field": f"mitigations.{k}", "baseline": vb.get(k),
                                    "current": vc.get(k)})
        elif f == "tsc_khz" and vb and vc and abs(vc - vb) <= TSC_KHZ_TOLERANCE * vb:
            continue
        elif vb != vc:
            changes.append({"field": f, "baseline": vb, "current": vc})
    return changes


# ---- the gate ---------------------------------------------------------------------

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


@dataclasses.dataclass
class Verdict:
    baseline: Run
    current: Run
    config: Config
    results: list
    environment: list      # environment_changes between the paired machines
    cross_machine: bool
    liveness: gate_liveness.Report  # counters that died or came alive

    @property
    def passed(self) -> bool:
        return not any(r.fails for r in self.results) and not self.liveness.fails

    def count(self, decision: str) -> int:
        return sum(r.decision == decision for r in self.results)


def _missing_why(b: dict, c: dict | None) -> str | None:
    """Why the baseline row b has no comparable current row c, or None."""
    if c is None:
        return "absent from the current run"
    if c["status"] != "ok":
        return f"{c['status']} in the current run: {c['reason']}"
    if (b["stand_in"] is None) != (c["stand_in"] is None):
        return ("the current run measures the real thing, the baseline a stand-in"
                if c["stand_in"] is None else
                f"the current run measures a stand-in ({c['stand_in']}), "
                "the baseline the real thing")
    return None


def run_gate(baseline: Run, current: Run, config: Config) -> Verdict:
    """Pair, compare and decide every row. InputError when the runs cannot
    be compared at all (another machine, duplicate keys, nothing measured)."""
    fields = () if config.cross_machine else config.identity
    b_index, c_index = _index(baseline, fields), _index(current, fields)
    for run, index in ((baseline, b_index), (current, c_index)):
        if not index:
            raise InputError(f"{display(run.file)}: no measured rows (only reference rows): "
                             "nothing to gate")
    b_ids = {ident for ident, _ in b_index}
    c_ids = {ident for ident, _ in c_index}
    if b_ids.isdisjoint(c_ids):
        raise InputError(_machine_mismatch(baseline, current, b_ids, c_ids, config))

    results = [Result(row, SKIPPED_REFERENCE, "a published figure, not measured")
               for _, row in baseline.rows if row["harness"] == "reference"]
    pairs = []  # (baseline, current) of every key in both: for the liveness comparison
    for k, (_, b) in b_index.items():
        if k in c_index:
            pairs.append((b, c_index[k][1]))
        ident, _ = k
        rule = config.rule_for(b)
        if b["status"] != "ok":
            results.append(Result(b, SKIPPED_NOT_OK,
                                  f"{b['status']} in the baseline: {b['reason']}"))
            continue
        if ident not in c_ids:
            results.append(Result(b, OTHER_MACHINE,
                                  "measured on a machine the current run does not include: "
                                  + _describe_identity(ident)))
            continue
        c = c_index.get(k, (None, None))[1]
        why = _missing_why(b, c)
        if why is not None:
            decision = ALLOWED_MISSING if is_allowed(row_id(b), config.allow_missing) else MISSING
            results.append(Result(b, decision, why, rule, current=c))
            continue
        comparison = compare(b["samples"], c["samples"])
        decision, why = decide(comparison, b["metric"], rule)
        results.append(Result(b, decision, why, rule, comparison, c))
    for k, (_, c) in c_index.items():
        if k not in b_index:
            results.append(Result(c, NEW, "not in the baseline" if c["status"] == "ok"
                                  else f"not in the baseline; {c['status']}: {c['reason']}",
                                  current=c))

    # what changed on the machine between the two runs
    first_b = {ident: row["machine"] for (ident, _), (_, row) in reversed(b_index.items())}
    first_c = {ident: row["machine"] for (ident, _), (_, row) in reversed(c_index.items())}
    env_fields = MACHINE_FIELDS if config.cross_machine else \
        tuple(f for f in MACHINE_FIELDS if f not in config.identity)
    environment = []
    for ident in sorted(b_ids & c_ids, key=repr):
        environment += environment_changes(first_b[ident], first_c[ident], env_fields)
    return Verdict(baseline, current, config, results, environment, config.cross_machine,
                   gate_liveness.compare_pairs(pairs, config.counter_died))


# ---- reports ----------------------------------------------------------------------

def _num(x):
    """A float for JSON: None for NaN or infinity."""
    return None if x is None or not math.isfinite(x) else float(x)


def verdict_json(v: Verdict) -> dict:
    """The JSON verdict: the overall outcome, the settings and every row."""
    def row_entry(r: Result) -> dict:
        row = r.row
        entry = {"id": row_id(row), **{f: row[f] for f in KEY_FIELDS}, "unit": row["unit"],
                 "decision": r.decision, "fails": r.fails, "why": r.why or None,
                 "baseline_status": None if r.decision == NEW else row["status"],
                 "current_status": (r.current or {}).get("status")}
        if r.rule is not None:
            entry.update(alpha=r.rule.alpha, threshold_pct=r.rule.threshold_pct,
                         min_samples=r.rule.min_samples, worse_when=WORSE_WHEN[row["metric"]])
        c = r.comparison
        if c is not None:
            entry.update(n_baseline=c.n_baseline, n_current=c.n_current,
                         median_baseline=c.median_baseline, median_current=c.median_current,
                         change_pct=_num(c.change_pct), p_value=c.p_value,
                         cliffs_delta=c.cliffs_delta,
                         cliffs_magnitude=cliffs_magnitude(c.cliffs_delta))
        return entry

    order = {d: i for i, d in enumerate(DECISIONS)}
    ordered = sorted(v.results, key=lambda r: (order[r.decision], _sort_key(r)))
    cfg = v.config
    return {
        "gate_version": VERDICT_VERSION,
        "verdict": "pass" if v.passed else "fail",
        "exit_code": EXIT_PASS if v.passed else EXIT_FAIL,
        "baseline": v.baseline.describe(),
        "current": v.current.describe(),
        "settings": {"config": cfg.source, "defaults": dataclasses.asdict(cfg.defaults),
                     "metrics": cfg.metrics, "paths": cfg.paths, "cross_cpu": cfg.cross_cpu,
                     "rows": dict(cfg.rows),
                     "allow_missing": list(cfg.allow_missing),
                     "identity": list(cfg.identity), "cross_machine": v.cross_machine,
                     "counter_died": cfg.counter_died},
        "environment_changes": v.environment,
        "counts": {d: v.count(d) for d in DECISIONS},
        "liveness_changes": gate_liveness.json_entries(v.liveness, row_id),
        "liveness_not_compared": v.liveness.predates,
        "rows": [row_entry(r) for r in ordered],
    }


def _sort_key(r: Result):
    row = r.row
    path = PATHS.index(row["path"]) if row["path"] in PATHS else len(PATHS)
    return (path, row["op"], row["target"] or "", str(row["cpu"]), str(row["target_cpu"]),
            row["metric"], row["harness"])


def fmt_value(x: float, unit: str) -> str:
    """3 significant digits, ns scaled to µs/ms/s (as the latency table)."""
    if x is None or not math.isfinite(x):
        return "—"
    if unit == "ns":
        factor, name = next(((f, n) for f, n in table.NS_SCALES if abs(x) >= f), (1.0, "ns"))
        return f"{table.sig3(x / factor)} {name}"
    return f"{table.sig3(x)} {table.UNIT_LABELS.get(unit, unit)}"


def fmt_change(x: float) -> str:
    if math.isinf(x):
        return "+∞" if x > 0 else "−∞"
    return f"{x:+.1f}%"


def fmt_p(p: float) -> str:
    return "<0.0001" if p < 1e-4 else f"{p:.4f}"


def fmt_p_is(p: float) -> str:
    """"p = 0.0017", "p < 0.0001"."""
    return "p < 0.0001" if p < 1e-4 else f"p = {p:.4f}"


def fmt_delta(d: float) -> str:
    return f"{d:+.2f} ({cliffs_magnitude(d)})"


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _table(header, lines) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(_cell(c) for c in cells) + " |" for cells in lines]
    return out


def _rule_note(rule: Rule, defaults: Rule) -> str:
    """The settings of a row that differ from [defaults], e.g. "±25%"."""
    parts = []
    if rule.threshold_pct != defaults.threshold_pct:
        parts.append(f"±{rule.threshold_pct:g}%")
    if rule.alpha != defaults.alpha:
        parts.append(f"α = {rule.alpha:g}")
    if rule.min_samples != defaults.min_samples:
        parts.append(f"min {rule.min_samples} samples")
    return ", ".join(parts)


def _compared_lines(results, defaults: Rule) -> list:
    lines = []
    for r in results:
        c, unit = r.comparison, r.row["unit"]
        note = "; ".join(x for x in (_rule_note(r.rule, defaults), r.why) if x)
        lines.append((label(r.row), fmt_value(c.median_baseline, unit),
                      fmt_value(c.median_current, unit), fmt_change(c.change_pct),
                      fmt_p(c.p_value), fmt_delta(c.cliffs_delta), note))
    return lines


COMPARED_HEADER = ("row", "baseline median", "current median", "change", "p", "Cliff's δ", "note")


def _has_overrides(config: Config) -> bool:
    return bool(config.metrics or config.paths or config.cross_cpu or config.rows)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _run_line(run: Run) -> str:
    ids = ", ".join(f"`{i}`" for i in run.run_ids)
    return f"{ids} ({display(run.file)})"


def markdown(v: Verdict) -> str:
    """The Markdown summary: for a terminal, a PR comment or a step summary."""
    groups = {d: sorted((r for r in v.results if r.decision == d), key=_sort_key)
              for d in DECISIONS}
    n = {d: len(rs) for d, rs in groups.items()}
    tally = [_plural(n[REGRESSION], "regression")]
    if n[MISSING]:
        tally.append(f"{n[MISSING]} missing")
    died = len(v.liveness.of_kind(gate_liveness.DIED))
    if died:
        # rows, not counters: one dead counter reaches every row that reads it
        tally.append(f"{_plural(died, 'row')} whose counter died")
    tally.append(_plural(n[IMPROVEMENT], "improvement"))
    tally.append(f"{n[UNCHANGED]} unchanged")
    head = "✅ pass" if v.passed else "❌ fail"
    d = v.config.defaults
    out = [f"## raplbench gate: {head} — {', '.join(tally)}", "",
           f"Baseline {_run_line(v.baseline)} → current {_run_line(v.current)}.", "",
           f"A row regresses when a two-sided Mann–Whitney U test on its samples gives "
           f"p < {d.alpha:g} **and** its median is worse by more than {d.threshold_pct:g}% "
           f"(at least {d.min_samples} samples a side"
           + (f"; overrides per metric, path or row in `{v.config.source}`, "
              "the thresholds applied are in each row's note"
              if _has_overrides(v.config) else "") + ")."]
    if v.cross_machine:
        out += ["", "> ⚠️ **Cross-machine comparison**: the rows were paired without regard "
                    "to the machine; differences below may come from the hardware."]
    if v.environment:
        changes = "; ".join(f"{c['field']} `{c['baseline']}` → `{c['current']}`"
                            for c in v.environment)
        out += ["", f"> **Machine changes since the baseline**: {changes}"]

    def section(title, lines_):
        out.extend(["", f"### {title}", "", *lines_])

    if n[REGRESSION]:
        section(f"❌ Regressions ({n[REGRESSION]})",
                _table(COMPARED_HEADER, _compared_lines(groups[REGRESSION], d)))
    for decision, title in ((MISSING, "❌ Missing or no longer ok"),
                            (ALLOWED_MISSING, "Missing, allowed by `[allow] missing`")):
        if n[decision]:
            section(f"{title} ({n[decision]})", _table(
                ("row", "id (for `[allow] missing`)", "baseline median", "why"),
                [(label(r.row), f"`{row_id(r.row)}`",
                  fmt_value(r.row["median"], r.row["unit"]), r.why) for r in groups[decision]]))
    out += gate_liveness.markdown_sections(v.liveness, label, _table)
    if n[IMPROVEMENT]:
        section(f"✅ Improvements ({n[IMPROVEMENT]})",
                _table(COMPARED_HEADER, _compared_lines(groups[IMPROVEMENT], d)))
    not_compared = groups[TOO_FEW_SAMPLES] + groups[OTHER_MACHINE]
    if not_compared:
        section(f"⚠️ Not compared ({len(not_compared)})",
                _table(("row", "why"), [(label(r.row), r.why) for r in not_compared]))
    if n[UNCHANGED]:
        out += ["", f"<details><summary>{n[UNCHANGED]} unchanged</summary>", "",
                *_table(COMPARED_HEADER, _compared_lines(groups[UNCHANGED], d)), "", "</details>"]
    if n[NEW]:
        out += ["", f"<details><summary>{_plural(n[NEW], 'new row')} (not in the baseline)"
                    "</summary>", "",
                *(f"- {label(r.row)}" + ("" if r.row["status"] == "ok" else f": {r.row['status']}")
                  for r in groups[NEW]), "", "</details>"]
    skipped = [f"{_plural(n[SKIPPED_NOT_OK], 'row')} not ok in the baseline"
               if n[SKIPPED_NOT_OK] else "",
               f"{_plural(n[SKIPPED_REFERENCE], 'reference row')}" if n[SKIPPED_REFERENCE] else ""]
    if any(skipped):
        out += ["", "Skipped: " + ", ".join(s for s in skipped if s) + "."]
    return "\n".join(out) + "\n"


def failure_lines(v: Verdict) -> list[str]:
    """One line per failing row, for the log."""
    lines = []
    for r in sorted((r for r in v.results if r.fails), key=_sort_key):
        if r.decision == REGRESSION:
            c = r.comparison
            lines.append(f"gate: regression: {label(r.row)}: {fmt_change(c.change_pct)} "
                         f"(median {fmt_value(c.median_baseline, r.row['unit'])} → "
                         f"{fmt_value(c.median_current, r.row['unit'])}, {fmt_p_is(c.p_value)})")
        else:
            lines.append(f"gate: missing: {label(r.row)} [{row_id(r.row)}]: {r.why}")
    return lines + gate_liveness.failure_lines(v.liveness, label)


# ---- command line -------------------------------------------------------------------

def _same_file(a, b) -> bool:
    return os.path.abspath(a) == os.path.abspath(b)


def write_outputs(v: Verdict, md: str, summary: str | None, verdict_path: Path) -> None:
    step = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary and not (step and _same_file(summary, step)):
        Path(summary).write_text(md, encoding="utf-8")
    if step:
        with open(step, "a", encoding="utf-8") as f:
            f.write(md + "\n")
    verdict_path.write_text(json.dumps(verdict_json(v), indent=2, ensure_ascii=False,
                                       allow_nan=False) + "\n", encoding="utf-8")


def store_baseline(current_arg, baseline_arg) -> int:
    """make baseline: validate the current run and copy its results.jsonl to
    the baseline file (written whole, then renamed: never half a baseline)."""
    src = results_file(current_arg, "run to store",
                       ": run `make bench-all` first" if current_arg == DEFAULT_CURRENT else "")
    run = load_run(src)
    dst = Path(baseline_arg)
    if dst.is_dir() or dst.suffix != ".jsonl":
        dst = dst / "results.jsonl"
    dst.parent.mkdir(parents=True, exist_ok=True)
    tmp = dst.with_name(f".{dst.name}.{os.getpid()}")
    shutil.copyfile(src, tmp)
    tmp.replace(dst)
    print(f"baseline: {display(dst)} <- {display(src)} "
          f"(run {', '.join(run.run_ids)}, {len(run.rows)} rows)")
    return EXIT_PASS


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="ci/gate",
        description="Fail when an access path got slower than in a baseline run "
                    "(exit 0 pass, 1 regression or missing row, 2 usage or input error).")
    p.add_argument("--baseline", default=DEFAULT_BASELINE, metavar="RUN",
                   help="baseline run directory or results.jsonl "
                        f"(default: {display(DEFAULT_BASELINE)}, stored by make baseline)")
    p.add_argument("--current", default=DEFAULT_CURRENT, metavar="RUN",
                   help="current run directory or results.jsonl "
                        f"(default: {display(DEFAULT_CURRENT)})")
    p.add_argument("--config", type=Path, metavar="TOML",
                   help=f"gate settings (default: {display(DEFAULT_CONFIG)} if it exists)")
    p.add_argument("--summary", metavar="FILE",
                   help="also write the Markdown summary here (it is always printed, and "
                        "appended to $GITHUB_STEP_SUMMARY when that is set)")
    p.add_argument("--verdict", type=Path, metavar="FILE",
                   help=f"JSON verdict (default: {VERDICT_NAME} next to the current results.jsonl)")
    p.add_argument("--alpha", type=float, help=f"override [defaults] alpha (built-in {ALPHA})")
    p.add_argument("--threshold-pct", type=float,
                   help=f"override [defaults] threshold_pct (built-in {THRESHOLD_PCT:g})")
    p.add_argument("--min-samples", type=int,
                   help=f"override [defaults] min_samples (built-in {MIN_SAMPLES})")
    p.add_argument("--cross-machine", action="store_true",
                   help="pair rows whatever machine they were measured on")
    p.add_argument("--store-baseline", action="store_true",
                   help="do not gate: validate CURRENT and copy its results.jsonl to BASELINE")
    return p.parse_args(argv)


def apply_overrides(config: Config, args) -> Config:
    """Command-line settings replace [defaults] (per-metric and per-path
    settings still win) and can turn on cross-machine comparison."""
    overrides = {k: getattr(args, k) for k in RULE_KEYS if getattr(args, k) is not None}
    for k, v in overrides.items():
        problem = _check_rule_value(k, v)
        if problem:
            raise InputError(f"--{k.replace('_', '-')}: {problem}")
    return dataclasses.replace(config, defaults=dataclasses.replace(config.defaults, **overrides),
                               cross_machine=config.cross_machine or args.cross_machine)


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        if args.store_baseline:
            return store_baseline(args.current, args.baseline)
        config = apply_overrides(
            load_config(args.config or DEFAULT_CONFIG, required=args.config is not None), args)
        baseline = load_run(results_file(
            args.baseline, "baseline",
            ": store one with `make baseline`, or name one with BASELINE=<run dir or results.jsonl>"
            if args.baseline == DEFAULT_BASELINE else ""))
        current = load_run(results_file(
            args.current, "current run",
            ": run `make bench-all` first" if args.current == DEFAULT_CURRENT else ""))
        verdict = run_gate(baseline, current, config)
        md = markdown(verdict)
        verdict_path = args.verdict or current.file.resolve().parent / VERDICT_NAME
        try:
            write_outputs(verdict, md, args.summary, verdict_path)
        except OSError as e:
            raise InputError(f"{e.filename}: cannot write: {e.strerror or e}") from None
    except (InputError, runfile.RunFileError) as e:
        print(e, file=sys.stderr)
        print("gate: not run (usage or input error, exit 2)", file=sys.stderr)
        return EXIT_USAGE
    sys.stdout.write(md)
    sys.stdout.flush()
    for line in failure_lines(verdict):
        print(line, file=sys.stderr)
    outcome = "pass" if verdict.passed else "FAIL"
    print(f"gate: {outcome}: {verdict.count(REGRESSION)} regressions, "
          f"{verdict.count(MISSING)} missing, "
          f"{len(verdict.liveness.of_kind(gate_liveness.DIED))} rows whose counter died, "
          f"{verdict.count(IMPROVEMENT)} improvements, "
          f"{verdict.count(UNCHANGED)} unchanged; verdict in {display(verdict_path)}",
          file=sys.stderr)
    return EXIT_PASS if verdict.passed else EXIT_FAIL


if __name__ == "__main__":
    sys.exit(main())
