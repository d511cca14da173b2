"""The gate's settings: ci/gate.toml parsed and validated into a Config,
which gives the Rule that decides each row; the row id its patterns match
([allow] missing, [rows."..."]); the machine identity of [machine]. Also
InputError and display(), with which every input problem of the gate is
told (exit status 2). The defaults are ci/gate.toml's own (DEFAULTED).
"""

import dataclasses
import fnmatch
import math
import tomllib
from pathlib import Path

from ci import gate_liveness
from ci.gate_stats import (ABOVE_NULL_RULES, METRIC_RULES, REPETITIONS, SAMPLES_ARE, WORSE_WHEN,
                           Rule)
from results import registry, rows, schema, table


# ---- input problems --------------------------------------------------------------

class InputError(Exception):
    """A usage or input problem (exit 2). The message names the file."""


def display(path) -> str:
    """A path as short as it is unambiguous: relative to the working directory
    when under it."""
    p = Path(path)
    try:
        return str(p.absolute().relative_to(Path.cwd()))
    except ValueError:
        return str(p)


# ---- rows and machines -----------------------------------------------------------

# What a row is, apart from its machine: rows pair on these fields.
KEY_FIELDS = ("harness", "path", "op", "target", "role", "cpu", "target_cpu", "target_state",
              "metric")

# The machine of a row: the [machine] identity fields of ci/gate.toml.
MACHINE_FIELDS = tuple(schema.SCHEMA["$defs"]["machine"]["properties"])
IDENTITY_CHOICES = tuple(f for f in MACHINE_FIELDS if f != "mitigations")


def is_cross_cpu(row) -> bool:
    """Does the row read another CPU's counter (an IPI on the msr, powercap
    and perf routes)?"""
    return row["cpu"] is not None and row["target_cpu"] is not None \
        and row["cpu"] != row["target_cpu"]


def is_allowed(row_id_: str, patterns) -> bool:
    """Does an [allow] missing pattern (fnmatch, case-sensitive) match this id?"""
    return any(fnmatch.fnmatchcase(row_id_, p) for p in patterns)


def row_id(row) -> str:
    """The id that [allow] missing and [rows] patterns match:
    path/op/target/cpu>target_cpu[:target_state]/metric/harness with "-" for
    a null, e.g. "msr-dev/pread/0x611/1>0:busy/latency/gbench",
    "powercap/pread/<file>/0>-/latency/gbench"."""
    def text(v):
        return "-" if v is None else str(v)
    state = f":{row['target_state']}" if row.get("target_state") else ""
    return "/".join((row["path"], row["op"], text(table.shown_target(row)),
                     f"{text(row['cpu'])}>{text(row['target_cpu'])}{state}", row["metric"],
                     row["harness"]))


# ---- configuration -------------------------------------------------------------

DEFAULT_CONFIG = Path(__file__).with_name("gate.toml")
# The sections whose keys ci/gate.toml sets for every config: the defaults.
DEFAULTED = ("defaults", "machine", "liveness")


@dataclasses.dataclass(frozen=True)
class Config:
    """ci/gate.toml, or a file given with --config, validated."""
    defaults: Rule
    metrics: dict    # metric -> partial Rule
    paths: dict      # path -> partial Rule
    cross_cpu: dict  # partial Rule
    rows: tuple      # ((row id pattern, partial Rule), ...) in file order
    allow_missing: tuple
    identity: tuple
    cross_machine: bool
    counter_died: str   # gate_liveness.POLICIES
    source: str         # the file it came from

    def rule_for(self, row) -> Rule:
        """[defaults], overridden key by key by the layers below, in order
        (ci/README.md, "Configuration"): the last setting of a key wins.
        [cross_cpu] is for the reader's own time of an IPI route, not for the
        victim's rows of the same placement, judged in their unit."""
        layers = [METRIC_RULES.get(row["metric"], {})]
        if row["role"] == rows.ABOVE_NULL:
            layers.append(ABOVE_NULL_RULES.get(row["metric"], {}))
        layers += [self.metrics.get(row["metric"], {}), self.paths.get(row["path"], {})]
        if is_cross_cpu(row) and SAMPLES_ARE.get(row["metric"]) == REPETITIONS:
            layers.append(self.cross_cpu)
        rid = row_id(row)
        layers += [rule for pattern, rule in self.rows if fnmatch.fnmatchcase(rid, pattern)]
        merged = {key: value for layer in layers for key, value in layer.items()}
        return dataclasses.replace(self.defaults, **merged)


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def check_rule_value(key: str, v):
    """None if v is a valid value of a Rule field, else the complaint."""
    if key == "alpha":
        return None if _is_number(v) and 0 < v < 1 \
            else "must be a number between 0 and 1 (exclusive)"
    if key == "threshold_pct":
        return None if _is_number(v) and v >= 0 else "must be a number ≥ 0 (percent)"
    if key == "min_samples":
        return None if isinstance(v, int) and not isinstance(v, bool) and v >= 1 \
            else "must be an integer ≥ 1"
    if key == "threshold_abs":
        return None if _is_number(v) and v >= 0 else "must be a number ≥ 0 (in the row's unit)"
    if key == "min_effect":
        return None if _is_number(v) and 0 <= v <= 1 \
            else "must be a number between 0 and 1 (|Cliff's delta|)"
    raise AssertionError(key)


RULE_KEYS = tuple(f.name for f in dataclasses.fields(Rule))
SECTIONS = ("defaults", "metrics", "paths", "cross_cpu", "rows", "allow", "machine", "liveness")


def parse_config(doc: dict, source: str) -> Config:
    """Validate a parsed ci/gate.toml, or another file over ci/gate.toml's
    DEFAULTED sections (key by key). InputError "<source>: <key>: <problem>"
    on the first unknown key or bad value."""
    shipped, doc = read_toml(DEFAULT_CONFIG), dict(doc)
    for section in DEFAULTED:
        own = doc.get(section, {})
        doc[section] = {**shipped.get(section, {}), **own} if isinstance(own, dict) else own

    def fail(key, problem):
        raise InputError(f"{source}: {key}: {problem}")

    def known(keys):
        return "known: " + ", ".join(keys)

    def table_of(key, value):
        if not isinstance(value, dict):
            fail(key, "must be a table")
        return value

    def keyed(key, value, keys):
        """A table whose every key is one of `keys`."""
        for k in table_of(key, value):
            if k not in keys:
                fail(f"{key}.{k}", f"unknown key ({known(keys)})")
        return value

    def rule(key, value) -> dict:
        for k, v in table_of(key, value).items():
            if k not in RULE_KEYS:
                fail(f"{key}.{k}", f"unknown key ({known(RULE_KEYS)})")
            problem = check_rule_value(k, v)
            if problem:
                fail(f"{key}.{k}", problem)
        return dict(value)

    for section in doc:
        if section not in SECTIONS:
            fail(section, f"unknown section ({known(SECTIONS)})")
    defaults = rule("defaults", doc["defaults"])
    for k in ("alpha", "threshold_pct", "min_samples"):
        if k not in defaults:
            fail(f"defaults.{k}", f"missing (set in {display(DEFAULT_CONFIG)})")
    defaults = Rule(**defaults)
    metrics, paths = {}, {}
    for name, choices, out in (("metrics", tuple(WORSE_WHEN), metrics),
                               ("paths", registry.PATHS, paths)):
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

    allow = keyed("allow", doc.get("allow", {}), ["missing"])
    missing = allow.get("missing", [])
    if not isinstance(missing, list) or not all(isinstance(p, str) and p for p in missing):
        fail("allow.missing", "must be a list of non-empty strings (patterns of row ids)")

    machine = keyed("machine", doc["machine"], ["identity", "cross_machine"])
    identity = machine.get("identity")
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
    died = keyed("liveness", doc["liveness"], ["counter_died"]).get("counter_died")
    if died not in gate_liveness.POLICIES:
        fail("liveness.counter_died", f"must be one of {', '.join(map(repr, gate_liveness.POLICIES))}")
    return Config(defaults=defaults, metrics=metrics, paths=paths, cross_cpu=cross_cpu,
                  rows=tuple(row_rules), allow_missing=tuple(missing),
                  identity=tuple(identity), cross_machine=cross, counter_died=died,
                  source=source)


def read_toml(path: Path) -> dict:
    """A TOML file, parsed; InputError naming it when it cannot be read or parsed."""
    shown = display(path)
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except OSError as e:
        raise InputError(f"{shown}: cannot read: {e.strerror or e}") from None
    except tomllib.TOMLDecodeError as e:
        raise InputError(f"{shown}: not valid TOML: {e}") from None


def load_config(path: Path | None = None) -> Config:
    """The config at `path` (ci/gate.toml by default)."""
    path = path or DEFAULT_CONFIG
    return parse_config(read_toml(path), display(path))
