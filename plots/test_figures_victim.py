"""The victim side (issue 16): the victim and idle-cost figures and tables
built from the KVM guest fixture (plots/fixtures/kvm-victim), its rows
matched to their routes' latency, "within noise" where a CI holds 0,
unavailable experiments kept with their reason, and the report's files."""

import csv
import dataclasses
import io
import re

import matplotlib
import matplotlib.pyplot as plt
import pytest

from results import meaning

from plots import figures_victim, label_overlap, report_tables, tables
from plots import victim_rows as vr
from plots.fixtures import AMD, KVM_VICTIM, emulated_copy
from plots.runs import Run, load_runs
from plots.test_figures import all_figures
from plots.test_report import md_table, png_size

VM_LABEL = "AMD EPYC [VM]"


@pytest.fixture(scope="module")
def vm():
    return load_runs([KVM_VICTIM])


@pytest.fixture(scope="module")
def vm_and_emulated(vm):
    """The guest beside a copy of itself as if emulated: two machines' panels."""
    copy = emulated_copy(vm[0].rows)
    return vm + [Run(vm[0].path, copy, label="AMD EPYC [emulated]")]


@pytest.fixture(scope="module")
def busy_vm(vm):
    """The guest as if measured beside other work (results/contention.py):
    its platform line grows a note that titles must wrap."""
    step = {"wall_s": 20.0, "others_cpu_s": 40.0, "others_cpus": 2.0, "steal_pct": 0.1,
            "load1": 3.0, "top": [{"command": "rustc", "cpu_s": 40.0}]}
    busy = {"busy": True, "reason": "busy machine during idle: other processes used up to "
            "2.00 CPUs (rustc), steal up to 0.1%", "steps": {"idle": step},
            "thresholds": {"others_cpus": 0.1, "steal_pct": 5.0}}
    rows = [{**r, "machine": {**r["machine"], "contention": busy}} for r in vm[0].rows]
    return [Run(vm[0].path, rows, label=vm[0].label.replace("[VM]", "[VM, busy]"))]


@pytest.fixture(scope="module")
def vm_report(report_of):
    """The guest's report, shared with test_latex."""
    return report_of(KVM_VICTIM)


def route_rows(run, sampler=False):
    return [r for r in run.rows if r["harness"] == vr.VICTIM and (r["path"] == "sampler") == sampler]


# ---- reading the rows ----------------------------------------------------------------------

def test_targets_are_parsed_into_route_rate_and_victim():
    assert vr.parse_target("cpuid:0x0 @ flat out; victim CPU 0") == ("cpuid:0x0", True, None, 0)
    assert vr.parse_target("msr/tsc/ @ 1000 Hz; victim CPU 1") == ("msr/tsc/", True, 1000.0, 1)
    assert vr.parse_target("msr/tsc/ @ 100 Hz") == ("msr/tsc/", True, 100.0, None)
    assert vr.parse_target("@ 1000 Hz") == (None, True, 1000.0, None)  # a sampler that did not run
    assert vr.parse_target(None) == (None, False, None, None)


def test_every_route_row_finds_its_latency_rows(vm):
    run = vm[0]
    exps = vr.victim_experiments(run.rows, sampler=False)
    assert exps
    for e in exps:
        found = vr.latency_rows(run.rows, e.where)
        assert set(found) == {"gbench", "criterion"}, e.where
        for r in found.values():
            assert (r["path"], r["op"], r["cpu"], r["target_cpu"], r["target"]) == (
                e.where.path, e.where.op, e.where.cpu, e.where.target_cpu, e.where.route)


def test_unavailable_rows_take_rate_and_placement_from_their_target(vm):
    bad = [e for e in vr.victim_experiments(vm[0].rows, sampler=False) if not e.ok]
    assert bad
    for e in bad:
        assert e.where.rate_known and e.where.victim_cpu is not None
        assert e.where.placement == (vr.IS_TARGET if e.where.victim_cpu == e.where.target_cpu
                                     else vr.ELSEWHERE)


# ---- the figures ---------------------------------------------------------------------------

@pytest.mark.parametrize("layout", ["vm", "vm + emulated", "busy vm"])
def test_figures_build_without_overlapping_labels(vm, vm_and_emulated, busy_vm, refs, layout):
    plt.close("all")
    runs = {"vm": vm, "vm + emulated": vm_and_emulated, "busy vm": busy_vm}[layout]
    made = {"victim": figures_victim.victim_figure(runs),
            "idle": figures_victim.idle_figure(runs)}
    if layout == "vm":  # the other figures of a run with victim and idle rows (sampler.png)
        made.update(all_figures(runs, refs))
    assert made["victim"] is not None and made["idle"] is not None
    for name, fig in made.items():
        assert label_overlap.overlapping_texts(fig) == [], f"{layout}: {name}"
        assert label_overlap.texts_over_data(fig) == [], f"{layout}: {name}"
        if name in ("victim", "idle"):
            assert label_overlap.labels_longer_than_their_axes(fig) == [], f"{layout}: {name}"
            assert label_overlap.texts_beyond_their_axes(fig) == [], f"{layout}: {name}"
        plt.close(fig)


LONG_EVENT = "uncore_imc_free_running/data_read_write_of_a_long_event/"


def long_labels(run: Run) -> Run:
    """`run` with its perf and eBPF routes reading a perf event of a long
    name (the routes' labels take the width of the panels), and a stolen
    time within noise whose CI spans a hundred microseconds below 0 (a
    symmetric log axis of many decades each side of 0)."""
    from results import stats
    wide = [-150_000.0 + 25_000 * i for i in range(10)]  # -150 µs .. +75 µs
    out, widened = [], False
    for r in run.rows:
        if r.get("target") and "msr/tsc/" in r["target"]:
            r = {**r, "target": r["target"].replace("msr/tsc/", LONG_EVENT)}
        if (not widened and r["harness"] == vr.VICTIM and r["metric"] == vr.STOLEN
                and r["status"] == "ok" and meaning.of(r).within_noise):
            r, widened = {**r, "samples": wide, **stats.summarize(wide)}, True
        out.append(r)
    return Run(run.path, out, label=run.label)


def test_no_text_of_the_victim_figure_leaves_it_with_long_labels(vm):
    """Issue 33, item 4: victim.png's x label ran off the figure's right
    edge: under long route labels the panels narrow, and the label, wrapped
    at a fixed width, was wider than its panel. Labels and notes are wrapped
    to their panels, route labels to ROUTE_LABEL_WIDTH, and a symmetric log
    axis of many decades labels fewer of them."""
    fig = figures_victim.victim_figure([long_labels(vm[0])])
    lat, stolen = fig.axes[:2]
    assert stolen.get_xscale() == "symlog"
    assert any(LONG_EVENT.strip("/") in t.get_text().replace("\n", "")
               for t in lat.get_yticklabels())
    assert label_overlap.overlapping_texts(fig) == []  # the figure's edge among them
    assert label_overlap.labels_longer_than_their_axes(fig) == []
    assert label_overlap.texts_beyond_their_axes(fig) == []
    assert label_overlap.texts_over_data(fig) == []
    assert all(len(line) <= figures_victim.ROUTE_LABEL_WIDTH
               for t in lat.get_yticklabels() for line in t.get_text().split("\n"))
    plt.close(fig)


def test_victim_figure_has_a_row_per_route_and_placement(vm):
    fig = figures_victim.victim_figure(vm)
    lat, stolen = fig.axes[:2]
    ticks = [t.get_text() for t in lat.get_yticklabels()]
    routes = {vr.route_key(vr.where(r)) for r in route_rows(vm[0])}
    assert len(ticks) == len(routes)
    assert lat.get_xscale() == "log" and "ns per operation (log scale)" in lat.get_xlabel()
    assert "stolen" in stolen.get_xlabel()
    # the placement and stand-in as the latency figures name them, the victim's CPU
    assert any("other CPU 1→0" in t and "victim on CPU 0, the target" in t for t in ticks)
    assert any("same CPU 0→0" in t and "victim on CPU 1" in t for t in ticks)
    assert all("(stand-in)" in t for t in ticks)
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert figures_victim.NOISE_LABEL in legend
    assert figures_victim.NOT_MEASURED_LABEL in legend
    assert {"stolen, reader flat out", "stolen, reader 1000 Hz"} <= set(legend)
    plt.close(fig)


def test_an_unavailable_route_keeps_its_row_and_says_so(vm):
    fig = figures_victim.victim_figure(vm)
    lat, stolen = fig.axes[:2]
    ticks = [t.get_text() for t in lat.get_yticklabels()]
    bad = next(e for e in vr.victim_experiments(vm[0].rows, sampler=False) if not e.ok)
    row = next(i for i, t in enumerate(ticks) if t.startswith(f"{bad.where.path} {bad.where.op}")
               and f"{bad.where.cpu}→{bad.where.target_cpu}" in t)
    notes = [t for t in stolen.texts if t.get_text().startswith("not measured")]
    assert any(t.get_position()[1] == row for t in notes)
    plt.close(fig)


def test_points_whose_ci_holds_zero_or_lies_below_it_are_hollow(vm):
    fig = figures_victim.victim_figure(vm)
    stolen = fig.axes[1]
    markers = [line for line in stolen.lines if line.get_xydata().shape[0] == 1
               and line.get_marker() in ("D", "o")]
    hollow = [m for m in markers if m.get_markerfacecolor() in ("white", (1.0, 1.0, 1.0, 1.0))]
    noise = [r for r in route_rows(vm[0])
             if r["metric"] == vr.STOLEN and meaning.of(r).not_resolved]
    resolved = [r for r in route_rows(vm[0])
                if r["metric"] == vr.STOLEN and r["status"] == "ok" and not meaning.of(r).not_resolved]
    assert noise and resolved
    assert len(hollow) == len(noise)
    assert len(markers) - len(hollow) == len(resolved)
    plt.close(fig)


def test_idle_figure_lines_per_mechanism_and_no_c_states_note(vm):
    fig = figures_victim.idle_figure(vm)
    wake, busy, deep = fig.axes[:3]
    assert wake.get_xscale() == "log" and "frequency" in wake.get_xlabel()
    assert "wakeups per second above baseline" in wake.get_ylabel()
    assert "busy % of one CPU above baseline" in busy.get_ylabel()
    assert any("No C-state residency" in t.get_text() for t in deep.texts)
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    mechanisms = {r["op"] for r in vm[0].rows if r["harness"] == vr.IDLE and r["status"] == "ok"}
    assert mechanisms <= set(legend)  # every mechanism on the guest is a stand-in: said once
    assert any(t.startswith("not measured: kernel") for t in legend)
    plt.close(fig)


def mechanism_lines(fig) -> dict[str, list]:
    """{mechanism: the linestyles of its lines} over the idle figure's panels:
    the lines through more than one point in data coordinates (not the 0
    line), by their colour."""
    by_color = {tuple(c): op for op, c in figures_victim.MECHANISM_COLORS.items()}
    found: dict[str, list] = {}
    for ax in fig.axes:
        for line in ax.lines:
            if len(line.get_xydata()) > 1 and line.get_transform() == ax.transData:
                op = by_color[tuple(matplotlib.colors.to_rgb(line.get_color()))]
                found.setdefault(op, []).append(line.get_linestyle())
    return found


def test_every_line_a_stand_in_is_drawn_solid_and_said_once(vm):
    """Issue 33, item 4: every mechanism on the guest reads a stand-in, so
    every line was dashed and the dashes told nothing. They are solid, and
    the legend says once that all of them are stand-ins."""
    fig = figures_victim.idle_figure(vm)
    styles = mechanism_lines(fig)
    assert styles and all(s == "-" for ss in styles.values() for s in ss), styles
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend.count(figures_victim.ALL_STAND_INS_LABEL) == 1
    assert "all mechanisms here measured on stand-ins" in figures_victim.ALL_STAND_INS_LABEL
    assert not any("dashed" in t for t in legend)
    plt.close(fig)


def test_stand_ins_are_dashed_beside_real_counters(vm):
    """Where some mechanism reads the real counter (perf here), the dashes
    tell the stand-ins from it, and nothing says "all stand-ins"."""
    run = vm[0]
    rows = [{**r, "stand_in": None} if r["harness"] == vr.IDLE and r["op"] == "perf" else r
            for r in run.rows]
    fig = figures_victim.idle_figure([Run(run.path, rows, label=run.label)])
    styles = mechanism_lines(fig)
    assert set(styles["perf"]) == {"-"}
    others = [s for op, ss in styles.items() if op != "perf" for s in ss]
    assert others and set(others) == {"--"}
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "perf" in legend and "powercap (stand-in, dashed)" in legend
    assert figures_victim.ALL_STAND_INS_LABEL not in legend
    plt.close(fig)


def test_no_victim_rows_no_figures(runs):
    assert figures_victim.victim_figure(runs) is None
    assert figures_victim.idle_figure(runs) is None
    assert report_tables.victim_table(runs[0]) is None
    assert report_tables.idle_cost_table(runs[0]) is None


# ---- the tables ----------------------------------------------------------------------------

def test_victim_table_has_a_line_per_experiment_and_says_within_noise(vm):
    run = vm[0]
    table = report_tables.victim_table(run)
    exps = vr.victim_experiments(run.rows, sampler=False)
    assert len(table.body) == len(exps)
    header, body, notes = md_table(tables.to_markdown([table]), VM_LABEL)
    col = {name: i for i, name in enumerate(header)}
    stolen = col["stolen per read (95% CI)"]
    for e, line in zip(exps, body):
        r = e.get(vr.STOLEN)
        assert ("within noise" in line[stolen]) == meaning.of(r).within_noise
        if r["status"] != "ok":
            assert line[stolen] == "—"
    k = re.search(r"within noise \[(\d+)\]", "\n".join(" ".join(b) for b in body)).group(1)
    assert notes[k].startswith("within noise: the 95% CI")
    # an IPI route (the cpuid stand-in from the other CPU) resolved, in µs
    ipi = next(b for b in body if b[col["route"]] == "msr-dev pread"
               and b[col["cpu→target"]] == "1→0" and b[col["rate"]] == "flat out")
    assert ipi[stolen].split(" (")[0].endswith(" µs") and "within noise" not in ipi[stolen]
    assert ipi[col["victim"]] == "CPU 0 (the target)"


def test_unavailable_experiments_keep_their_line_and_reason(vm):
    run = vm[0]
    for table, sampler in ((report_tables.victim_table(run), False),
                           (report_tables.victim_table(run, sampler=True), True)):
        header, body, notes = md_table(tables.to_markdown([table]), VM_LABEL)
        col = {name: i for i, name in enumerate(header)}
        bad = [r for r in route_rows(run, sampler) if r["status"] != "ok"]
        assert bad
        lines = [b for b in body if "unavailable" in b[col["note"]]]
        assert len(lines) == len(bad)
        for line in lines:
            k = re.search(r"unavailable \[(\d+)\]", line[col["note"]]).group(1)
            assert any(notes[k] == f"unavailable: {r['reason']}" for r in bad)
            assert line[col["n"]] == "—"


def test_victim_sampler_table(vm):
    run = vm[0]
    table = report_tables.victim_table(run, sampler=True)
    assert table.name == "victim-sampler"
    mechanisms = [b[0] for b in table.body]
    assert set(mechanisms) == {r["op"] for r in route_rows(run, sampler=True)}
    assert "ticks/s" in table.columns


def test_idle_cost_table(vm):
    run = vm[0]
    table = report_tables.idle_cost_table(run)
    header, body, notes = md_table(tables.to_markdown([table]), VM_LABEL)
    col = {name: i for i, name in enumerate(header)}
    exps = vr.idle_experiments(run.rows)
    assert len(body) == len(exps)
    assert {b[col["frequency"]] for b in body} >= {"10 Hz", "100 Hz", "1000 Hz", "10000 Hz"}
    assert any("within noise" in b[col["wakeups/s above baseline (95% CI)"]]
               or "within noise" in b[col["busy % above baseline (95% CI)"]] for b in body)
    deep = next(r for r in run.rows if r["metric"] == vr.DEEP_IDLE and r["status"] != "ok")
    assert f"unavailable: {deep['reason']}" in notes.values()
    assert all(b[col["deep idle above baseline (95% CI)"]] == "—" for b in body)


def test_csv_is_long_form_with_numbers_in_base_units(vm):
    run = vm[0]
    records = list(csv.DictReader(io.StringIO(tables.to_csv([report_tables.victim_table(run)]))))
    assert len(records) == len(route_rows(run))
    ok = [r for r in records if r["status"] == "ok" and r["metric"] == vr.STOLEN]
    assert all(r["within_noise"] in ("True", "False") and r["placement"] for r in ok)
    bad = [r for r in records if r["status"] != "ok"]
    assert all(r["median"] == "" and r["reason"] for r in bad)


# ---- the report ----------------------------------------------------------------------------

def test_the_report_writes_the_victim_files_and_sections(vm_report):
    out, result = vm_report
    for name in ("victim", "victim-sampler", "idle-cost"):
        for ext in ("md", "csv", "tex"):
            assert (out / f"{name}.{ext}").is_file() and f"{name}.{ext}" in result["files"]
    sizes = {m["file"]: (m["width"], m["height"]) for m in result["figures"]}
    for name in ("victim.png", "idle-cost.png"):
        assert png_size(out / name) == sizes[name]
    page = (out / "index.html").read_text()
    assert '<h2 id="victim">' in page and '<h2 id="idle-cost">' in page
    assert "are not the real counters" in page
    tex = (out / "victim.tex").read_text()
    assert r"\label{tab:raplbench-victim-amd-epyc-vm}" in tex
    assert tex.isascii()


def test_a_report_without_victim_rows_has_no_victim_files(report_of):
    _, result = report_of(AMD)
    assert not any(f.startswith(("victim", "idle-cost")) for f in result["files"])


def test_rows_that_say_no_more_than_each_other_stay_apart(vm):
    """Two failed frequencies of one mechanism, both with a null target
    (results/idle_cost.py: the sampler never named its counters)."""
    failed = [r for r in vm[0].rows if r["harness"] == vr.IDLE and r["op"] == "kernel"]
    exps = vr.idle_experiments(failed + [dict(r) for r in failed])
    assert len(exps) == 2 and all(set(e.rows) == set(vr.IDLE_METRICS) for e in exps)


def test_too_few_pairs_for_a_ci_are_not_a_finding(vm):
    """A QUICK run's 3 pairs: their 'CI' is the min-max (covers 75%), so a
    line says 'too few pairs', never a resolved cost, even when 0 is outside."""
    import copy
    run = copy.deepcopy(vm[0])
    ipi = next(r for r in route_rows(run) if r["metric"] == vr.STOLEN and r["status"] == "ok"
               and not meaning.of(r).within_noise)
    ipi.update(samples=ipi["samples"][:3], n=3)
    assert meaning.of(ipi).too_few and meaning.of(ipi).not_resolved and not meaning.of(ipi).within_noise
    header, body, notes = md_table(tables.to_markdown([report_tables.victim_table(run)]), VM_LABEL)
    line = " ".join(" ".join(b) for b in body)
    k = re.search(r"too few pairs \[(\d+)\]", line).group(1)
    assert "not a finding" in notes[k]


def test_a_run_of_the_victim_step_alone_draws_its_figure(vm):
    """bench_all --only victim: no latency rows to put beside the victim's."""
    only = Run(vm[0].path, [r for r in vm[0].rows if r["harness"] == vr.VICTIM], label=VM_LABEL)
    fig = figures_victim.victim_figure([only])
    assert fig is not None
    fig.canvas.draw()
    assert any("no latency rows" in t.get_text() for ax in fig.axes for t in ax.texts)
    plt.close(fig)


def test_stolen_time_below_zero_is_baseline_drift_hollow_and_said(vm):
    """Issue 33: a read cannot give the victim CPU time back. A stolen-time
    row whose CI lies below 0 is drawn hollow and its cell says "baseline
    drift, not a saving", footnoted."""
    from results import stats
    run = vm[0]
    target = next(r for r in route_rows(run) if r["metric"] == vr.STOLEN
                  and r["status"] == "ok" and not meaning.of(r).not_resolved)
    below = [-300.0 + 5 * i for i in range(12)]
    changed = [{**r, "samples": below, **stats.summarize(below)} if r is target else r
               for r in run.rows]
    drifted = Run(run.path, changed, label=run.label)
    (row,) = [r for r in changed if r["samples"] == below]
    assert meaning.of(row).drift
    table = report_tables.victim_table(drifted)
    header, body, notes = md_table(tables.to_markdown([table]), VM_LABEL)
    stolen = header.index("stolen per read (95% CI)")
    cells = [line[stolen] for line in body if "baseline drift" in line[stolen]]
    drifting = [e for e in vr.victim_experiments(changed, sampler=False)
                if meaning.of(e.get(vr.STOLEN)).drift]
    assert len(cells) == len(drifting) >= 1  # the fixture's own, and this one
    k = re.search(r"baseline drift, not a saving \[(\d+)\]", cells[0]).group(1)
    assert notes[k] == meaning.DRIFT_NOTE
    fig = figures_victim.victim_figure([drifted])
    markers = [line for line in fig.axes[1].lines if line.get_xydata().shape[0] == 1
               and line.get_marker() in ("D", "o")]
    (point,) = [m for m in markers if m.get_xydata()[0][0] == row["median"]]
    assert point.get_markerfacecolor() in ("white", (1.0, 1.0, 1.0, 1.0))
    plt.close(fig)


def with_baselines(run: Run, baselines: dict[str, float]) -> Run:
    """`run` with every ok idle row of a metric in `baselines` measured
    against that baseline median."""
    rows = [{**r, "parameters": {**r["parameters"], "baseline_median": baselines[r["metric"]]}}
            if r["harness"] == vr.IDLE and r["status"] == "ok" and r["metric"] in baselines
            else r for r in run.rows]
    return Run(run.path, rows, label=run.label)


def test_the_idle_baselines_have_3_significant_digits_and_their_unit(vm):
    """Issue 33, item 4: a panel's baseline read "0.943617 %"; it is given
    as the idle-cost table gives it (results/table.py: 3 significant
    digits, the unit after a space)."""
    run = with_baselines(vm[0], {vr.BUSY: 0.943617, vr.WAKEUPS: 186.4321})
    fig = figures_victim.idle_figure([run])
    titles = [ax.get_title() for ax in fig.axes]
    assert "CPU time of the whole machine (baseline 0.944 %)" in titles
    assert "Wakeups: interrupts + softirqs (baseline 186 /s)" in titles
    assert not any("0.943617" in t or "186.4" in t for t in titles)
    plt.close(fig)


def test_the_readers_latency_is_taken_in_the_state_the_victim_puts_the_target_in():
    """Issue 34: the victim spinning on the target CPU is the busy state;
    spinning elsewhere leaves it idle."""
    def lat(state):
        return {"metric": "latency", "harness": "gbench", "path": "perf", "op": "read",
                "cpu": 1, "target_cpu": 0, "target": "msr/tsc/", "target_state": state}
    rows = [lat("idle"), lat("ticking"), lat("busy")]
    where = vr.Where(path="perf", op="read", route="msr/tsc/", cpu=1, target_cpu=0,
                     stand_in=None, rate_hz=None, rate_known=True, victim_cpu=0,
                     placement=vr.IS_TARGET)
    assert vr.latency_rows(rows, where)["gbench"]["target_state"] == "busy"
    elsewhere = dataclasses.replace(where, victim_cpu=2, placement=vr.ELSEWHERE)
    assert vr.latency_rows(rows, elsewhere)["gbench"]["target_state"] == "idle"
    # rows without states (a run before them): the one there is
    assert vr.latency_rows([lat(None)], where)["gbench"]["target_state"] is None
