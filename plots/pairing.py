"""Which rows stand side by side.

- A published figure (a reference row) is compared with the local latency
  row of the same path and op (`best_local`): ok before not ok, same CPU (or
  no per-CPU target) before another CPU, the real counter before a stand-in,
  the RAPL package counter before other targets, gbench before the other
  harnesses. A path that could not run at all (a harness-level row, op "*")
  gives the reason. For the paper's in-kernel nop, mov and cpuid, a machine
  without the kernel module falls back to the same instruction in user space
  (uinsn), marked as such.
- Rows of different machines are compared by `quantity`: path, operation,
  what was read (an MSR by its name, so Intel's 0x611 and AMD's 0xc001029b
  are both "PKG energy"), CPU placement and harness.
"""

from results import registry

from plots import labels

HARNESS_ORDER = ("gbench", "kbench", "criterion", "sampler", "hyperfine")
USER_SPACE_FALLBACK = {("kinsn", "nop"): "nop", ("kinsn", "mov"): "mov",
                       ("kinsn", "cpuid:0x1"): "cpuid:0x1"}
PACKAGE_TARGETS = ("PKG energy",)

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
    for prefix, note in SOURCE_NOTES.items():
        if label.startswith(prefix):
            return note
    return None


def is_latency(row) -> bool:
    return row["metric"] == "latency"


def _rank(row, path_op):
    target_name = labels.msr_name(row.get("target")) or labels.short_target(row.get("target"))
    harness = row["harness"]
    return (row["status"] != "ok",
            labels.placement(row) == labels.OTHER_CPU,
            labels.is_stand_in(row),
            row["op"] != path_op[1],  # an exact op before a harness-level "*" row
            target_name not in PACKAGE_TARGETS and target_name != "intel-rapl:0",
            HARNESS_ORDER.index(harness) if harness in HARNESS_ORDER else len(HARNESS_ORDER))


def preferred(rows: list[dict], path_op: tuple[str, str]) -> dict | None:
    """The row to show for (path, op) among `rows` (None when empty): ok
    before not ok, same CPU before another CPU, the real counter before a
    stand-in, the exact op before a harness-level "*" row, the package
    counter first, gbench before the other harnesses."""
    return min(rows, key=lambda r: _rank(r, path_op), default=None)


def best_local(ref: dict, rows: list[dict]) -> tuple[dict | None, str]:
    """(local row, how) for a published latency figure; how is "same" (same
    path and op), "user-space" (uinsn for the paper's kernel loop) or "none"
    (nothing measured, not even a reason)."""
    key = (ref["path"], ref["op"])
    candidates = [r for r in rows if is_latency(r) and r["path"] == key[0]
                  and r["op"] in (key[1], "*")]
    best = preferred(candidates, key)
    if best is not None and best["status"] == "ok":
        return best, "same"
    user_op = USER_SPACE_FALLBACK.get(key)
    if user_op:
        user = [r for r in rows if is_latency(r) and r["path"] == "uinsn"
                and r["op"] == user_op and r["status"] == "ok"]
        if user:
            return preferred(user, ("uinsn", user_op)), "user-space"
    return best, ("same" if best is not None else "none")


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
    order = registry.PATHS
    value: dict[tuple, float] = {}
    for r in refs:
        if r["metric"] == "latency":
            key, v = (r["path"], r["op"]), published_value(r)
            value[key] = min(value.get(key, v), v)
    return sorted(value, key=lambda k: (order.index(k[0]) if k[0] in order else 99, value[k], k[1]))


def quantity(row: dict) -> tuple:
    """The key of one quantity across machines."""
    op, target = row["op"], row.get("target")
    if op.startswith("rdmsr:"):
        op, target = "rdmsr", op.split(":", 1)[1]
    what = labels.msr_name(target) or labels.short_target(target)
    return (row["path"], op, what, labels.placement(row), row["harness"])


def quantity_label(key: tuple, with_harness: bool = False) -> str:
    path, op, what, place, harness = key
    text = " ".join(x for x in (path, labels.op_label(op), what) if x)
    if place != labels.NO_TARGET:
        text += f" · {place}"
    if with_harness:
        text += f" ({harness})"
    return text


def sort_key(key: tuple) -> tuple:
    path, op, what, place, harness = key
    paths = registry.PATHS  # the registry order, as in every table
    return (paths.index(path) if path in paths else len(paths), op, what,
            labels.PLACEMENTS.index(place), harness)
