"""Which rows stand side by side.

- A published figure (a reference row) is compared with the local latency
  row of the same path and op (`best_local`): ok before not ok, same CPU (or
  no per-CPU target) before another CPU, then `route_rank` (below). A path
  that could not run at all (a harness-level row, op "*") gives the reason. For the paper's in-kernel nop, mov and cpuid, a machine
  without the kernel module falls back to the same instruction in user space
  (uinsn), marked as such.
- Rows of different machines are compared by route (`quantity`): path,
  operation, CPU placement (same CPU, other CPU, not per-CPU) and harness,
  not by the exact target, so a perf or eBPF route lines up across machines
  that read different counters through it (the msr/tsc/ stand-in on one,
  power/energy-psys on another; CPU 1→0 on one, 15→0 on another). The one
  exception is the rdmsr instruction, whose operation is the MSR it reads:
  those are compared by the MSR's name, so Intel's 0x611 and AMD's
  0xc001029b are both "PKG energy". Where one machine has several rows of a
  route (the msr device read at 0x611 and 0x639, several perf events on bare
  metal), `route_rank` picks one, the same way on every machine: ok before
  not ok, no target state or an idle target before a ticking, then a busy
  one (issue 34; across machines the states are routes of their own), the
  real counter before a stand-in, the package energy counter
  before other targets, a live counter before a frozen or unit-less one,
  then the harness (gbench, kbench, criterion, ...), then the target's text
  (so the choice never depends on row order). The same rule picks a
  ladder's rung among harnesses (plots/report_tables_stats.py), and a
  published figure's local row after its placement.
"""

from typing import NamedTuple

from results import liveness, meaning, rapl_msrs

from results import table as text_table

from plots import labels

HARNESS_ORDER = ("gbench", "kbench", "criterion", "sampler", "hyperfine")
USER_SPACE_FALLBACK = {("kinsn", "nop"): "nop", ("kinsn", "mov"): "mov",
                       ("kinsn", "cpuid:0x1"): "cpuid:0x1"}
PACKAGE_TARGETS = tuple(sorted({m.label for m in rapl_msrs.MSRS if m.domain == "package"}))

# What a published table's figures are, once per table (the rows' own
# `source` strings carry each figure as printed).
SOURCE_NOTES = {
    "Diamond & Stoico 2026, Table 3": (
        "median of 15 batches of 100,000 operations in an in-kernel loop, printed in ms per "
        "batch and converted to ns per operation (x 10); Intel 8809G (NUC8i7HVK), NixOS 24.04"),
    "Raffin & Trystram 2024, Table III": (
        "time to read one RAPL counter with Criterion, printed as a 95% confidence interval in "
        "µs (no point estimate), converted to ns (x 1000); the ratio uses the interval's "
        "midpoint; CPU placement not stated"),
    "Diamond & Stoico 2026, Table 1": (
        "relative overhead of the median run time of a NAS benchmark with the tool sampling "
        "RAPL at 1 kHz, over the median without any tool, 15 runs each; Intel 8809G "
        "(NUC8i7HVK), NixOS 24.04"),
}


def source_note(label: str) -> str | None:
    return next((note for prefix, note in SOURCE_NOTES.items() if label.startswith(prefix)), None)


def is_package_counter(target: str | None) -> bool:
    """The RAPL package energy counter, by any route: MSR 0x611 / 0xc001029b,
    a top-level powercap zone (intel-rapl:0, not its subzone intel-rapl:0:0),
    the perf event power/energy-pkg/."""
    name = labels.msr_name(target) or labels.short_target(target)
    return (name in PACKAGE_TARGETS or labels.is_package_zone(target)
            or name == "energy-pkg")


def harness_rank(harness: str) -> tuple[int, str]:
    """gbench, kbench, criterion, sampler, hyperfine, then any other by name."""
    return (HARNESS_ORDER.index(harness) if harness in HARNESS_ORDER else len(HARNESS_ORDER),
            harness)


def route_rank(row: dict) -> tuple:
    """The one rule (the module's docstring) for which of several rows of one
    quantity stands for it: the smallest."""
    return (row["status"] != "ok", text_table.state_rank(row), labels.is_stand_in(row),
            not is_package_counter(row.get("target")), meaning.of(row).dead,
            harness_rank(row["harness"]), row.get("target") or "")


def pick(rows: list[dict]) -> dict | None:
    """The row that stands for `rows` by route_rank (None when empty)."""
    return min(rows, key=route_rank, default=None)


def preferred(rows: list[dict], path_op: tuple[str, str]) -> dict | None:
    """The row to show for (path, op) among `rows` (None when empty): ok
    before not ok, same CPU before another CPU, the exact op before a
    harness-level "*" row, then route_rank."""
    return min(rows, key=lambda r: (r["status"] != "ok", labels.placement(r) == labels.OTHER_CPU,
                                    r["op"] != path_op[1], route_rank(r)), default=None)


def best_local(ref: dict, rows: list[dict]) -> tuple[dict | None, str]:
    """(local row, how) for a published latency figure; how is "same" (same
    path and op), "user-space" (uinsn for the paper's kernel loop) or "none"
    (nothing measured, not even a reason)."""
    key = (ref["path"], ref["op"])
    candidates = [r for r in rows if r["metric"] == "latency" and r["path"] == key[0]
                  and r["op"] in (key[1], "*")]
    best = preferred(candidates, key)
    if best is not None and best["status"] == "ok":
        return best, "same"
    user_op = USER_SPACE_FALLBACK.get(key)
    if user_op:
        user = [r for r in rows if r["metric"] == "latency" and r["path"] == "uinsn"
                and r["op"] == user_op and r["status"] == "ok"]
        if user:
            return preferred(user, ("uinsn", user_op)), "user-space"
    return best, ("same" if best is not None else "none")


def unlike(ref: dict, local: dict | None, how: str) -> str | None:
    """Why local ÷ published would divide unlike things, or None: a ratio
    compares like with like only (issue 33): the real counter with the real
    one, the paper's privilege level with the same, bare metal with bare
    metal (a VM exit or an emulated CPU is no hardware's cost)."""
    if local is None or local["status"] != "ok":
        return None
    if how == "user-space":
        return "a user-space instruction against the paper's kernel loop"
    if local.get("stand_in") and not ref.get("stand_in"):
        return "a stand-in against the real counter"
    here, there = local["machine"].get("hypervisor"), ref["machine"].get("hypervisor")
    if bool(here) != bool(there):
        return (f"a virtual machine ({here}) against bare metal" if here
                else f"bare metal against a virtual machine ({there})")
    return None


def published_value(ref: dict) -> float | None:
    """The figure a published row is plotted and divided at: its median, else
    its mean, else the midpoint of its 95% interval."""
    for key in ("median", "mean"):
        if ref.get(key) is not None:
            return ref[key]
    if ref.get("ci95_low") is not None and ref.get("ci95_high") is not None:
        return (ref["ci95_low"] + ref["ci95_high"]) / 2
    return None


def published_order(refs: list[dict]) -> list[tuple[str, str]]:
    """(path, op) of every published latency figure: in the registry's path
    order, then by the published value (a ladder within each path)."""
    value: dict[tuple, float] = {}
    for r in refs:
        if r["metric"] == "latency":
            key, v = (r["path"], r["op"]), published_value(r)
            value[key] = min(value.get(key, v), v)
    return sorted(value, key=lambda k: (labels.path_rank(k[0]), value[k], k[1]))


class Route(NamedTuple):
    """One quantity across machines: a route, not a target. `what` is the
    MSR's name for the rdmsr instruction ("PKG energy"; its address when
    unnamed), "" for every other operation; `placement` labels.where_read's
    (another CPU's reads in each target state apart)."""
    path: str
    op: str
    what: str
    placement: str
    harness: str


def quantity(row: dict) -> Route:
    """The route of a row: the key of one quantity across machines."""
    op, what = row["op"], ""
    if op.startswith("rdmsr:"):
        address = op.split(":", 1)[1]
        op, what = "rdmsr", labels.msr_name(address) or address
    return Route(row["path"], op, what, labels.where_read(row), row["harness"])


def route_rows(rows: list[dict]) -> dict[Route, dict]:
    """{route: the row that stands for it} of one machine's latency rows
    (harness-level "*" rows give no route: they say why a path is missing)."""
    found: dict[Route, dict] = {}
    for r in rows:
        if r["metric"] != "latency" or r["op"] == "*":
            continue
        key = quantity(r)
        found[key] = pick([r, found[key]]) if key in found else r
    return found


def status_tags(row: dict) -> list[str]:
    """The words of a row's status: "stand-in", then "frozen" or "no-unit";
    none for a live or non-energy row."""
    return (["stand-in"] if labels.is_stand_in(row) else []) \
        + ([liveness.tag(row)] if meaning.of(row).dead else [])


def status_words(row: dict) -> str:
    """The one wording of a row's status after what it read: " (stand-in)",
    " (frozen)", " (no-unit)", " (stand-in, frozen)" or "" (a live or
    non-energy row)."""
    words = status_tags(row)
    return f" ({', '.join(words)})" if words else ""


def read_mark(row: dict | None) -> str:
    """What a machine's row of a route read, short, with its status words:
    "msr/tsc (stand-in)", "energy-psys (frozen)", "energy-pkg"; "" without
    a target."""
    if row is None or not row.get("target"):
        return ""
    # an rdmsr's route already names the MSR: its address is what differs
    text = (row["target"].lower() if row["op"].startswith("rdmsr:")
            else labels.short_target(row["target"]))
    return text + status_words(row)


def quantity_label(key: tuple, with_harness: bool = False) -> str:
    """"perf read · other CPU (gbench)", "kinsn rdmsr PKG energy · same CPU",
    "msr-dev pread · other CPU, target busy": target states kept apart."""
    path, op, what, place, harness = key
    text = " ".join(x for x in (path, labels.op_label(op), what) if x)
    if place != labels.NO_TARGET:
        text += f" · {place}"
    if with_harness:
        text += f" ({harness})"
    return text


def sort_key(key: tuple) -> tuple:
    path, op, what, place, harness = key
    return (labels.path_rank(path), op, what, labels.WHERE_READ.index(place),
            *harness_rank(harness))
