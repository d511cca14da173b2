"""Plausibility checks on one run: ratios between paths measured in the same
run, which hold on any x86 machine whatever its speed. bench-all prints them
with their figures after the table; they flag a broken harness (an optimized
away loop, a mislabeled CPU pair), they are not pass/fail tests of a machine.

Each check compares medians of ok rows of one harness:
- uinsn nop is below 2 ns (a loop that measures more times the loop, not nop);
- ebpf-mmap load is at least 5x below ebpf-lookup (a load versus a syscall);
- perf read on the same CPU is below the read from another CPU (the IPI).
"""

from dataclasses import dataclass


@dataclass
class Check:
    name: str
    figure: str      # what was measured, e.g. "0.04 ns"
    expected: str    # e.g. "< 2 ns"
    ok: bool | None  # None: not measured in this run


def _median(rows, harness, path, op, same_cpu=None):
    """Median of the first ok latency row matching; same_cpu filters on
    cpu == target_cpu (True) or cpu != target_cpu (False)."""
    for r in rows:
        if (r["harness"], r["path"], r["op"], r["metric"], r["status"]) != \
                (harness, path, op, "latency", "ok"):
            continue
        if same_cpu is not None and (r["cpu"] == r["target_cpu"]) != same_cpu:
            continue
        return r["median"]
    return None


def run_checks(rows, harness="gbench") -> list[Check]:
    checks = []
    nop = _median(rows, harness, "uinsn", "nop")
    checks.append(Check(f"{harness} uinsn nop", "—" if nop is None else f"{nop:.3g} ns",
                        "< 2 ns", None if nop is None else nop < 2))
    lookup = _median(rows, harness, "ebpf-lookup", "lookup", same_cpu=True)
    load = _median(rows, harness, "ebpf-mmap", "load", same_cpu=True)
    ratio = lookup / load if lookup and load else None
    checks.append(Check(f"{harness} ebpf-lookup / ebpf-mmap (same CPU)",
                        "—" if ratio is None else f"{ratio:.3g}x", ">= 5x",
                        None if ratio is None else ratio >= 5))
    same = _median(rows, harness, "perf", "read", same_cpu=True)
    other = _median(rows, harness, "perf", "read", same_cpu=False)
    checks.append(Check(f"{harness} perf read, same CPU vs other CPU",
                        "—" if None in (same, other) else f"{same:.3g} ns vs {other:.3g} ns",
                        "same < other", None if None in (same, other) else same < other))
    return checks


def format_checks(checks) -> str:
    marks = {True: "ok", False: "UNEXPECTED", None: "not measured"}
    lines = ["Plausibility checks (ratios within this run):"]
    for c in checks:
        lines.append(f"  {marks[c.ok]:<12} {c.name}: {c.figure} (expected {c.expected})")
    return "\n".join(lines)
