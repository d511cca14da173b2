"""Machines side by side, as issue 17's user made it: a 2-vCPU AMD EPYC guest
(kvm-victim: the msr/tsc/ stand-in for perf and eBPF) beside a 16-vCPU Intel
guest (kvm-frozen: power/energy-psys, frozen). Routes line up although the
targets differ; each cell says what its machine read."""

import csv
import io

import pytest

from plots import pairing, report_tables_compare
from plots.fixtures import KVM_FROZEN, KVM_VICTIM
from plots.runs import load_runs
from plots.test_report import md_table


@pytest.fixture(scope="module")
def pair():
    return load_runs([KVM_VICTIM, KVM_FROZEN])


@pytest.fixture(scope="module")
def pair_report(report_of):
    """The report of the two guests, shared with test_latex."""
    out, _ = report_of(KVM_VICTIM, KVM_FROZEN)
    return out


def _row(path, op, target, cpu=0, target_cpu=0, status="ok", median=100.0, stand_in=None,
         harness="gbench", liveness=None):
    return {"path": path, "op": op, "target": target, "cpu": cpu, "target_cpu": target_cpu,
            "status": status, "median": median if status == "ok" else None,
            "stand_in": stand_in, "harness": harness, "metric": "latency",
            "liveness": liveness, "role": "measured", "schema_version": "3"}


def test_a_route_is_path_op_placement_harness_not_the_target():
    tsc = _row("perf", "read", "msr/tsc/", stand_in="no power PMU")
    psys = _row("perf", "read", "power/energy-psys/", cpu=15, target_cpu=0, liveness="frozen")
    psys_same = {**psys, "cpu": 0}
    assert pairing.quantity(tsc) == pairing.quantity(psys_same)
    assert pairing.quantity(psys).placement == "other CPU"
    # the target's states are kept apart across machines (issue 34)
    idle, busy = ({**psys, "target_state": s} for s in ("idle", "busy"))
    assert pairing.quantity(idle) != pairing.quantity(busy) != pairing.quantity(psys)
    assert pairing.quantity_label(pairing.quantity(busy)) == \
        "perf read · other CPU, target busy"
    # an rdmsr keeps its MSR's name: Intel 0x611 and AMD 0xc001029b are one quantity
    intel = _row("kinsn", "rdmsr:0x611", "0x611", harness="kbench")
    amd = _row("kinsn", "rdmsr:0xc001029b", "0xc001029b", harness="kbench")
    unit = _row("kinsn", "rdmsr:0x606", "0x606", harness="kbench")
    assert pairing.quantity(intel) == pairing.quantity(amd) != pairing.quantity(unit)
    assert pairing.quantity(intel).what == "PKG energy"


def test_one_row_per_route_chosen_by_a_stated_rule():
    cores = _row("perf", "read", "power/energy-cores/", median=400.0)
    pkg = _row("perf", "read", "power/energy-pkg/", median=600.0)
    stand_in = _row("perf", "read", "msr/tsc/", median=300.0, stand_in="no power PMU")
    dead_pkg = _row("perf", "read", "power/energy-pkg/", status="unavailable")
    psys_frozen = _row("perf", "read", "power/energy-psys/", median=200.0, liveness="frozen")
    cases = [([cores, pkg, stand_in], pkg),            # package energy first
             ([stand_in, cores], cores),               # the real counter before a stand-in
             ([dead_pkg, stand_in], stand_in),         # ok before not ok
             ([psys_frozen, cores], cores)]            # live before frozen
    for rows, chosen in cases:
        for order in (rows, rows[::-1]):               # whatever the row order
            (found,) = pairing.route_rows(order).values()
            assert found is chosen
    msr = [_row("msr-dev", "pread", "0x639"), _row("msr-dev", "pread", "0x611")]
    (found,) = pairing.route_rows(msr).values()
    assert found["target"] == "0x611"


def test_perf_and_ebpf_line_up_across_the_two_guests(pair, pair_report):
    keys, per_run = report_tables_compare.machine_quantities(pair)
    both = {k for k in keys if all(k in f and f[k]["status"] == "ok" for f in per_run)}
    assert {(k.path, k.op, k.placement) for k in both} >= {
        ("perf", "read", "same CPU"), ("perf", "read", "other CPU"),
        ("perf", "group-read", "same CPU"), ("ebpf-lookup", "lookup", "same CPU"),
        ("ebpf-lookup", "lookup", "other CPU"), ("ebpf-mmap", "load", "same CPU")}
    header, body, notes = md_table((pair_report / "machines.md").read_text(),
                                   "Machines side by side")
    line = next(r for r in body if r[0] == "perf read · other CPU (gbench)")
    victim, frozen = line[1], line[3]
    assert "· msr/tsc (stand-in)" in victim and "· energy-psys (frozen)" in frozen
    assert line[5].endswith("×") and line[5] != "—"
    # the marks' footnotes: the stand-in's reason, the frozen counter's note
    mark_v, mark_f = victim.rsplit("[", 1)[1].rstrip("]"), frozen.rsplit("[", 1)[1].rstrip("]")
    assert notes[mark_v].startswith("stand-in: no 'power' PMU")
    assert notes[mark_f].startswith("frozen counter: power/energy-psys/")
    # the figure draws the routes the table lines up
    from plots import figures
    fig = figures.machines_figure(pair)
    ticks = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert "perf read · other CPU (gbench)" in ticks
    records = list(csv.DictReader(io.StringIO((pair_report / "machines.csv").read_text())))
    perf = {(r["machine"], r["target"], r["cpu"], r["target_cpu"]) for r in records
            if r["quantity"] == "perf read · other CPU" and r["harness"] == "gbench"}
    assert {(t, c, tc) for _, t, c, tc in perf} == {("msr/tsc/", "1", "0"),
                                                    ("power/energy-psys/", "15", "0")}


def test_rows_of_a_route_stay_together_and_n_is_shown(pair, pair_report):
    header, body, _ = md_table((pair_report / "machines.md").read_text(),
                               "Machines side by side")
    assert header[2] == header[4] == "n"
    keys, per_run = report_tables_compare.machine_quantities(pair)
    # every route's lines (placements, harnesses) are consecutive, measured or not
    groups = [k[:3] for k in keys]
    for g in set(groups):
        first, last = groups.index(g), len(groups) - 1 - groups[::-1].index(g)
        assert set(groups[first:last + 1]) == {g}, g
    for key, line in zip(keys, body):
        for found, n_cell in zip(per_run, (line[2], line[4])):
            row = found.get(key)
            assert n_cell == (str(row["n"]) if row and row["status"] == "ok" else "—")
    # "not measured" lines are not pushed to the end of their path
    perf = [i for i, k in enumerate(keys) if k.path == "perf"]
    missing = [i for i in perf if any(keys[i] not in f for f in per_run)]
    assert missing and min(missing) < max(i for i in perf if i not in missing)


def test_bare_metal_pair_compares_the_msr_device_with_amds_stand_in(runs, built):
    out, _ = built
    _, body, _ = md_table((out / "machines.md").read_text(), "Machines side by side")
    line = next(r for r in body if r[0] == "msr-dev pread · same CPU (gbench)")
    assert "· 0x611 PKG energy" in line[1] and "· cpuid:0x0 (stand-in)" in line[3]
    rdmsr = next(r for r in body if r[0] == "kinsn rdmsr PKG energy · same CPU (kbench)")
    assert "· 0x611" in rdmsr[1] and "· 0xc001029b" in rdmsr[3]


def test_captions_name_each_machines_cpu_count_and_other_cpu(pair, pair_report):
    from plots.report_tables import machine_caption
    victim, frozen = (machine_caption(run) for run in pair)
    assert "virtual machine (kvm), 2 vCPUs; other CPU: 1→0 (reader→counter)" in victim
    assert "virtual machine (kvm), 16 vCPUs; other CPU: 15→0 (reader→counter)" in frozen
    text = (pair_report / "machines.md").read_text()
    assert "(1) AMD EPYC [VM]: " in text and "2 vCPUs" in text and "16 vCPUs" in text
    for name in ("latency", "sampler", "victim", "idle-cost"):
        assert "2 vCPUs" in (pair_report / f"{name}.md").read_text(), name
    from plots.fixtures import INTEL, SCHEMA1_INTEL
    bare, old = load_runs([INTEL, SCHEMA1_INTEL])
    assert "bare metal, 4 CPUs, 2 packages" in machine_caption(bare)
    assert "CPU count not recorded (run predates it)" in machine_caption(old)


def test_csvs_carry_the_cpu_facts(pair, pair_report):
    online = {run.label: str(run.machine["online_cpus"]) for run in pair}
    for name in ("machines", "latency", "sampler", "victim", "idle-cost", "reference"):
        records = list(csv.DictReader(io.StringIO((pair_report / f"{name}.csv").read_text())))
        column = "local_online_cpus" if name == "reference" else "online_cpus"
        found = {r["machine"]: r[column] for r in records}
        assert records and found.items() <= online.items(), name
        assert {"cpu", "target_cpu"} <= set(records[0]) or name == "reference", name
    machines = list(csv.DictReader(io.StringIO((pair_report / "machines.csv").read_text())))
    for run in pair:
        mine = {(r["cpu_family"], r["cpu_model"], r["cpu_stepping"], r["packages"])
                for r in machines if r["machine"] == run.label}
        m = run.machine
        assert mine == {(str(m["cpu_family"]), str(m["cpu_model"]), str(m["cpu_stepping"]),
                         str(m["packages"]))}
