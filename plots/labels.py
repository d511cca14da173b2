"""Names a reader sees: machines, path families, CPU placement, MSRs, short
targets. Pure functions of rows and machine objects (schema v1), no I/O.
"""

import re

from results import rapl_msrs, registry
from results.machine import EMULATED, is_emulated
from results.rows import ABOVE_NULL
from results.schedule import TARGET_STATES
from results.table import shorten

# ---- machines ----------------------------------------------------------------

VENDORS = {"GenuineIntel": "Intel", "AuthenticAMD": "AMD", "HygonGenuine": "Hygon",
           "CentaurHauls": "Centaur", "  Shanghai  ": "Zhaoxin"}


def vendor_name(machine: dict) -> str | None:
    """"Intel", "AMD", ... from the cpuid vendor string (None when unknown)."""
    vendor = machine.get("cpu_vendor")
    return VENDORS.get(vendor, vendor) if vendor else None


def model_name(machine: dict) -> str | None:
    """The model name without trademarks, frequency suffix and padding:
    "11th Gen Intel(R) Core(TM) i7-1185G7 @ 3.00GHz" -> "11th Gen Intel Core i7-1185G7"."""
    name = machine.get("cpu_model_name")
    if not name:
        return None
    name = re.sub(r"\((R|TM|tm|r)\)", "", name)
    name = re.sub(r"\s*@.*$", "", name)
    name = re.sub(r"\s+(CPU|Processor)$", "", name.strip()) or name
    return re.sub(r"\s+", " ", name).strip()


def machine_name(machine: dict) -> str:
    """Vendor and model name, e.g. "AMD Ryzen 9 7950X 16-Core": the key of
    machines side by side."""
    vendor, model = vendor_name(machine), model_name(machine)
    if model and vendor and not model.lower().startswith(vendor.lower()) \
            and vendor.lower() not in model.lower().split():
        return f"{vendor} {model}"
    return model or vendor or "unknown CPU"


def is_busy(machine: dict) -> bool:
    """Whether other work ran beside the run (results/contention.py):
    its figures are then not this machine's alone."""
    return bool((machine.get("contention") or {}).get("busy"))


def contention_note(machine: dict) -> str | None:
    """"measured on a busy machine (up to 0.95 CPUs of other work, steal
    up to 0.0%)" for a busy run, else None."""
    if not is_busy(machine):
        return None
    steps = machine["contention"]["steps"].values()
    others = max((s["others_cpus"] for s in steps), default=0.0)
    steal = max((s["steal_pct"] or 0.0 for s in steps), default=0.0)
    return (f"measured on a busy machine (up to {others:.2f} CPUs of other work, "
            f"steal up to {steal:.1f}%): not this machine's figures alone")


def platform(machine: dict) -> str:
    """"bare metal", "virtual machine (kvm)" or "emulated CPU (qemu-tcg)";
    "platform unknown" for published machines that do not say; a run made
    on a busy machine says so after it (contention_note)."""
    hypervisor = machine.get("hypervisor")
    if is_emulated(machine):
        text = f"emulated CPU ({EMULATED}): not hardware figures"
    elif hypervisor:
        text = f"virtual machine ({hypervisor})"
    elif machine.get("hostname") is None and machine.get("kernel") is None:
        text = "platform unknown"
    else:
        text = "bare metal"
    busy = contention_note(machine)
    return f"{text}; {busy}" if busy else text


def platform_tag(machine: dict) -> str:
    """A short tag for legends and column headers: "", "VM", "emulated",
    with ", busy" (or "busy") for a run made on a busy machine."""
    tag = "emulated" if is_emulated(machine) else "VM" if machine.get("hypervisor") else ""
    if is_busy(machine):
        tag = f"{tag}, busy" if tag else "busy"
    return tag


NO_CPU_COUNT = "CPU count not recorded (run predates it)"


def cpu_count(machine: dict) -> str:
    """How many CPUs the run saw online: "2 vCPUs" in a guest (hypervisor
    set), "64 CPUs, 2 packages" on bare metal; a run from before the
    schema recorded it says so."""
    if "online_cpus" not in machine:
        return NO_CPU_COUNT
    n, packages = machine["online_cpus"], machine.get("packages")
    if n is None:
        return "CPU count not readable"
    if machine.get("hypervisor"):  # a guest's packages are whatever the hypervisor shows
        return f"{n} vCPU{'s' if n != 1 else ''}"
    return f"{n} CPU{'s' if n != 1 else ''}, " + (
        f"{packages} package{'s' if packages != 1 else ''}" if packages
        else "packages not readable")


def other_cpu_pairs(rows) -> list[str]:
    """What "other CPU" meant in a run's latency rows: the distinct
    reader→counter CPU pairs ("1→0", "15→0"), in CPU order."""
    pairs = {(r["cpu"], r["target_cpu"]) for r in rows if r["metric"] == "latency"
             and placement(r) == OTHER_CPU}
    return [f"{cpu}→{target}" for cpu, target in sorted(pairs)]


def target_states_note(rows) -> str:
    """What the target states of a run's cross-CPU rows meant, in the order
    they are shown ("" where no row has one)."""
    seen = {r.get("target_state") for r in rows}
    states = [s for s in TARGET_STATES if s in seen]
    if not states:
        return ""
    return ("target CPU states of the cross-CPU reads: "
            + "; ".join(f"{s}, {TARGET_STATES[s]}" for s in states))


def machine_fields(machine: dict) -> dict:
    """The machine's CPU facts, kernel and hypervisor as CSV columns (None
    where not recorded)."""
    return {k: machine.get(k) for k in ("cpu_vendor", "cpu_model_name", "cpu_family",
                                         "cpu_model", "cpu_stepping", "online_cpus",
                                         "packages", "kernel", "hypervisor")}


def unique_labels(machines: list[dict], run_ids: list[str]) -> list[str]:
    """One label per run: the machine name, tagged "[VM]" / "[emulated]" (", busy"),
    made unique with the hostname, then the run id, when two runs share it."""
    def tagged(name, machine):
        tag = platform_tag(machine)
        return f"{name} [{tag}]" if tag else name

    labels = [tagged(machine_name(m), m) for m in machines]
    for suffixes in ([m.get("hostname") for m in machines], [f"run {r}" for r in run_ids]):
        labels = [f"{label} ({suffix})" if suffix and labels.count(label) > 1 else label
                  for label, suffix in zip(labels, suffixes)]
    return labels


def slug(text: str) -> str:
    """A file-name-safe form of a label: "AMD Ryzen 9 7950X" -> "amd-ryzen-9-7950x"."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60] or "machine"


# ---- rows ----------------------------------------------------------------------

# A latency figure per path family, from the registry (results/schema.json):
# (figure id, title, paths). Every path is in exactly one registry figure;
# the sampler's rows have figures of their own (figures.sampler_figure,
# figures.overhead_figure), so its figure is not a latency family.
FAMILIES = tuple((figure, title, registry.paths_in_figure(figure))
                 for figure, title in registry.FIGURES.items()
                 if figure != registry.SAMPLER_FIGURE)

def path_rank(path: str) -> int:
    """A path's place in the registry's order, as in every table (unknown paths last)."""
    return registry.PATHS.index(path) if path in registry.PATHS else len(registry.PATHS)


def mechanism_rank(op: str) -> int:
    """A sampler mechanism's place in the registry's order (unknown ones last)."""
    return registry.MECHANISMS.index(op) if op in registry.MECHANISMS else len(registry.MECHANISMS)


SAME_CPU, OTHER_CPU, NO_TARGET = "same CPU", "other CPU", "not per-CPU"
PLACEMENTS = (SAME_CPU, OTHER_CPU, NO_TARGET)


def other_cpu_in(state: str) -> str:
    """A read from another CPU whose target was held in `state` (issue 34)."""
    return f"{OTHER_CPU}, target {state}"


# placements with the target's state, in the order figures show them
WHERE_READ = (SAME_CPU, *map(other_cpu_in, TARGET_STATES), OTHER_CPU, NO_TARGET)


def where_read(row: dict) -> str:
    """placement(row), with the target CPU's state where it was set."""
    where, state = placement(row), row.get("target_state")
    return other_cpu_in(state) if state and where == OTHER_CPU else where


def placement(row: dict) -> str:
    """Where the benchmark ran relative to the counter it read: the msr
    driver, powercap and perf send an IPI to another CPU."""
    cpu, target = row.get("cpu"), row.get("target_cpu")
    if target is None or cpu is None:
        return NO_TARGET
    return SAME_CPU if cpu == target else OTHER_CPU


def msr_name(address: str | None) -> str | None:
    """The name of an MSR of kbench/rapl_msrs.h: "0x611" is "PKG energy"."""
    return rapl_msrs.LABELS.get((address or "").lower())


def op_label(op: str) -> str:
    """The operation as shown: "*" (a whole harness or path) is "(all)"."""
    return "(all)" if op == "*" else op


def short_target(target: str | None) -> str:
    """A target short enough for a tick label: the powercap zone, the MSR
    address and its name, the perf event without slashes, a file's name."""
    if not target:
        return ""
    m = re.search(r"/powercap/([^/]+)/", target)
    if m:
        return m.group(1)
    if re.fullmatch(r"0x[0-9a-fA-F]+", target):
        name = msr_name(target)
        return f"{target.lower()} {name}" if name else target.lower()
    m = re.fullmatch(r"(\w+)/([^/]+)/", target)  # perf event "power/energy-pkg/"
    if m:
        return m.group(2) if m.group(1) == "power" else f"{m.group(1)}/{m.group(2)}"
    if target.startswith("/"):
        return target.rsplit("/", 1)[-1]
    return shorten(target, 24)


def is_package_zone(target: str | None) -> bool:
    """A powercap package zone (intel-rapl:0), not a subzone (intel-rapl:0:0)."""
    zones = re.findall(r"(?:intel|amd)-rapl:[\d:]*\d", target or "")
    return bool(zones) and zones[-1].count(":") == 1


def cell_target(target: str | None, width: int = 32) -> str:
    """A target for a table cell: a file keeps its end (the name is there),
    anything else its beginning; "—" for none."""
    if not target:
        return "—"
    if target.startswith("/") or len(target) <= width:
        return shorten(target, width)
    return target[:width - 1] + "…"


def is_stand_in(row: dict) -> bool:
    return bool(row.get("stand_in"))


def overhead_measure(row: dict) -> str:
    """An overhead row's measure: "wall time" or "CPU time" (the target's
    last words); rows from before the CPU time was measured are wall time."""
    target = row.get("target") or ""
    return "CPU time" if target.endswith(": CPU time") else "wall time"


def overhead_placement(row: dict) -> str | None:
    """Where the overhead experiment pinned the sampler: "same CPU" (as the
    workload) or "other CPU" (its parameters); None for rows from before the
    sampler was pinned."""
    return (row.get("parameters") or {}).get("placement")


def above_null_row(rows, mechanism: str) -> dict | None:
    """The sampler's own CPU per tick above its null loop (the self-report's
    paired windows: role above-null), shown beside the overhead."""
    return next((r for r in rows if r["path"] == "sampler" and r["op"] == mechanism
                 and r["metric"] == "cpu_us_per_sample" and r["role"] == ABOVE_NULL), None)
