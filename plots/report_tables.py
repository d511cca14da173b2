"""The report's tables (plots/tables.py renders them; plots/README.md says
what each holds): latency, one per machine (cycles where kbench counted
them); sampler (a row above the null loop joins its sampler's line; the
overhead rows have their own table); victim, victim-sampler and idle-cost
(rows read by plots/victim_rows.py); and the cells, captions and footnotes
every table shares. Those that compare are in report_tables_compare.py,
the overhead tables in report_tables_overhead.py; what a row means (its
footnotes, "within noise") is results/meaning.py's.

Numbers are formatted as in the terminal table (results/table.py): 3
significant digits, ns scaled to µs / ms when large.
"""

from results import liveness, meaning
from results import table as text_table
from results.table import DASH, median_and_interval, sig3

from plots import labels
from plots import victim_rows as vr
from plots.runs import Run
from plots.tables import Notes, Table, with_mark

EMULATED_NOTE = ("emulated CPU (qemu-tcg): a timing of QEMU's software emulation, "
                 "not a hardware figure")
USER_SPACE_NOTE = ("no in-kernel figure on this machine: the same instruction timed in user "
                   "space (uinsn) is shown beside the paper's kernel loop")
MEDIAN_NOTE = ("Median of n repetitions (each the mean of many operations) with a "
               "distribution-free 95% confidence interval of the median from order statistics")


# ---- shared pieces ---------------------------------------------------------------------

def machine_caption(run: Run) -> str:
    """Machine, kernel, platform with its online CPU count, what "other CPU"
    meant (reader→counter CPUs of its latency rows) and date, for captions."""
    m, pairs = run.machine, labels.other_cpu_pairs(run.rows)
    clauses = [  # those that do not apply are falsy and left out
        f"Linux {m.get('kernel') or 'unknown'}", f"{labels.platform(m)}, {labels.cpu_count(m)}",
        pairs and f"other CPU: {', '.join(pairs)} (reader→counter)",
        labels.target_states_note(run.rows),
        m.get("smt") is not None and f"SMT {'on' if m['smt'] else 'off'}",
        m.get("governor") and f"governor {m['governor']}",
        m.get("boost") is not None and f"boost {'on' if m['boost'] else 'off'}",
        m.get("tsc_khz") and f"TSC {m['tsc_khz'] / 1000:.1f} MHz",
        f"run {run.run_id}, {run.date}"]
    return (f"{labels.machine_name(m)} ({m.get('cpu_model_name') or 'model name unknown'}, "
            f"family {m.get('cpu_family')} model {m.get('cpu_model')} stepping "
            f"{m.get('cpu_stepping')}, microcode {m.get('microcode') or 'unknown'}); "
            + "; ".join(c for c in clauses if c))


def median_ci(row: dict | None) -> str:
    """"218 ns (217–225 ns)", or "—"."""
    if row is None:
        return DASH
    median, ci = median_and_interval(row)
    return median if ci == DASH or median == DASH else f"{median} ({ci})"


def _said(row: dict | None) -> list[tuple[str, str]]:
    """text_table.row_notes, and the emulated CPU."""
    if row is None:
        return []
    return text_table.row_notes(row) + ([("emulated", EMULATED_NOTE)]
                                        if labels.is_emulated(row["machine"]) else [])


def row_notes(row: dict, notes: Notes) -> str:
    """The note cell: "stand-in [^2]", "frozen [^3]", "unavailable [^1]",
    "not resolved [^5]", "emulated [^4]"."""
    return "; ".join(with_mark(word, notes.mark(text)) for word, text in _said(row))


def cell_marks(row: dict | None, notes: Notes, *extra: str) -> str:
    """Footnote marks for a value cell (stand-in, not ok, emulated, extra)."""
    return notes.mark(*extra, *(text for _, text in _said(row)))


def predates_caption(rows) -> str:
    """A caption's sentence for a run of schema 1 rows, else ""."""
    if any(liveness.predates_probe(r) for r in rows):
        return f" This run predates liveness probing (schema 1): {liveness.PREDATES_NOTE}."
    return ""


def number(row, key):
    return row.get(key) if row is not None and row["status"] == "ok" else None


def ratio_cell(a, b) -> str:
    if a is None or b is None or b == 0:
        return DASH
    return f"{sig3(a / b)}×"


VALUES = ("median", "ci95_low", "ci95_high")


def row_fields(row: dict | None, suffix: str = "_ns") -> dict:
    """The CSV fields of a row: what it is, where it ran, its values (their
    keys ending in `suffix`); None each for no row."""
    return {**{k: row and row.get(k) for k in ("harness", "path", "op", "target", "cpu",
                                                "target_cpu", "target_state", "status", "n",
                                                "stand_in", "reason")},
            **{f"{k}{suffix}": number(row, k) for k in VALUES}, "liveness": meaning.of(row).verdict}


def row_record(run: Run, r: dict) -> dict:
    """The CSV fields of a row in the tables of rates and differences
    (sampler, victim, idle-cost): what it is, where it ran, its value."""
    return {**row_fields(r, suffix=""), "machine": run.label,
            "online_cpus": run.machine.get("online_cpus"), "run_id": r["run_id"],
            "date": run.date, "target": text_table.shown_target(r), "metric": r["metric"],
            "unit": r["unit"], "liveness_note": r.get("liveness_note")}


def twin_key(row):
    return (row["harness"], row["path"], row["op"], row.get("target"), row.get("cpu"),
            row.get("target_cpu"), row.get("target_state"), row.get("stand_in"))


# ---- latency -------------------------------------------------------------------------------

LATENCY_CSV = ["machine", "cpu_vendor", "cpu_model_name", "cpu_family", "cpu_model",
               "cpu_stepping", "online_cpus", "packages", "kernel", "hypervisor", "run_id",
               "date", "harness", "path", "op", "target", "cpu", "target_cpu", "target_state",
               "status", "median_ns", "ci95_low_ns", "ci95_high_ns", "n", "iterations",
               "cycles_median", "stand_in", "liveness", "liveness_note", "reason"]


def latency_table(run: Run) -> Table:
    rows = [r for r in run.rows if r["metric"] == "latency"]
    cycles = {twin_key(r): r for r in run.rows if r["metric"] == "cycles"}
    notes, body, records = Notes(), [], []
    for r in sorted(rows, key=text_table.sort_key):
        median, ci = median_and_interval(r)
        twin = cycles.get(twin_key(r))
        cyc = sig3(twin["median"]) if twin is not None and twin["status"] == "ok" else DASH
        n = str(r["n"]) if r["status"] == "ok" and r["n"] else DASH
        body.append([r["path"], labels.op_label(r["op"]), labels.cell_target(r.get("target")),
                     text_table.cpus(r), r["harness"], median, ci, n, cyc, row_notes(r, notes)])
        records.append({
            **row_fields(r), "machine": run.label, **labels.machine_fields(r["machine"]),
            "run_id": r["run_id"], "date": run.date, "iterations": r.get("iterations"),
            "cycles_median": number(twin, "median"), "liveness_note": r.get("liveness_note")})
    caption = (f"{machine_caption(run)}. {MEDIAN_NOTE}; cycles: TSC cycles per operation "
               f"where the kernel module counted them. Rows that could not be measured show "
               f"{DASH} and say why; stand-ins (a substitute of the same kernel route, measured "
               f"where the real counter is missing) are footnoted, and so are counters that are "
               f"frozen (never advanced while probed) or have no energy unit: their latency is "
               f"the route's cost, but they yield no energy.{predates_caption(rows)}")
    return Table(name="latency", key=f"latency-{labels.slug(run.label)}",
                 title=f"Latency per operation, {run.label}", caption=caption,
                 columns=["path", "op", "target", "cpu→target", "harness", "median", "95% CI",
                          "n", "cycles", "note"],
                 align="lllllrrrrl", body=body, footnotes=notes.list(),
                 csv_columns=LATENCY_CSV, records=records)


# ---- sampler and other rates ----------------------------------------------------------------

# the overhead rows (hyperfine) have a table of their own: overhead_tables.
# A column is (above null, metric): the sampler's CPU per tick above its null
# loop (the self-report's above-null row) is shown in the sampler's own line
ABOVE_NULL_CPU = (True, "cpu_us_per_sample")
SAMPLER_HEADERS = {(False, "rate_hz"): "rate", (False, "jitter_us"): "jitter",
                   (False, "missed_ticks"): "missed ticks",
                   (False, "cpu_us_per_sample"): "CPU per tick",
                   ABOVE_NULL_CPU: "CPU above null (95% CI)"}
SAMPLER_METRICS = {metric for _, metric in SAMPLER_HEADERS}
SAMPLER_CSV = ["machine", "online_cpus", "run_id", "date", "harness", "path", "op", "target", "cpu",
               "target_cpu", "metric", "unit", "status", "median", "ci95_low", "ci95_high", "n",
               "within_noise", "baseline_drift", "stand_in", "liveness", "liveness_note", "reason"]


def mechanism(row: dict) -> str:
    return row["op"] if row["path"] == "sampler" else f"{row['path']} {row['op']}"


def sampler_table(run: Run) -> Table | None:
    rows = [r for r in run.rows if r["metric"] in SAMPLER_METRICS]
    if not rows:
        return None
    groups: dict[tuple, dict[tuple, dict]] = {}
    for r in sorted(rows, key=text_table.sort_key):
        # a row above the null loop joins its sampler's line, in a column of its own
        above = meaning.of(r).above_null
        target = r.get("target") if above else text_table.shown_target(r)
        key = (r["path"], r["op"], target, r.get("cpu"), r.get("target_cpu"), r.get("stand_in"))
        groups.setdefault(key, {})[(above, r["metric"])] = r
    notes, body, records = Notes(), [], []
    for key, by_metric in groups.items():
        first = next(iter(by_metric.values()))
        cells = []
        for column in SAMPLER_HEADERS:
            r = by_metric.get(column)
            if r is None:
                cells.append("")
            elif column == ABOVE_NULL_CPU:
                cells.append(above_null_cell(r, notes))
            elif column == (False, "rate_hz") and r["status"] == "ok":
                cells.append(f"{r['median']:.1f} Hz")  # 999.1 Hz, not 999 Hz
            else:
                cells.append(median_and_interval(r)[0])
        harness = ", ".join(dict.fromkeys(r["harness"] for r in by_metric.values()))
        ns = sorted({str(r["n"]) for r in by_metric.values() if r["status"] == "ok"})
        note_words = dict.fromkeys(filter(None, (row_notes(r, notes) for r in by_metric.values())))
        body.append([mechanism(first), labels.cell_target(key[2]), text_table.cpus(first),
                     harness, *cells, "/".join(ns) or DASH, "; ".join(note_words)])
        records += [{**row_record(run, r),
                     **({"within_noise": meaning.of(r).within_noise,
                         "baseline_drift": meaning.of(r).drift} if meaning.of(r).above_null
                        else {"within_noise": None, "baseline_drift": None})}
                    for r in by_metric.values()]
    caption = (f"{machine_caption(run)}. Per mechanism of the 1 kHz sampler (and any other "
               f"rate measured in the run): achieved rate, interval jitter, missed ticks per "
               f"repetition, CPU time per tick (per-thread schedstat) and the slowdown of a "
               f"stress-ng workload under the sampler (%) with its 95% CI; the null timer "
               f"rows (target \"null: ...\") are the same loop reading nothing, measured in "
               f"windows alternating with the sampler's; CPU above null: the sampler's CPU "
               f"per tick minus its null window's, one difference per pair of windows, with "
               f"its 95% CI (\"within noise\" where it holds 0, footnoted). Medians of n "
               f"repetitions (windows, or pairs of windows); where "
               f"the metrics of a line have different counts, n lists each, separated by "
               f"\"/\" (an older run kept every interval error of one window as the jitter's "
               f"samples: \"1/500\"). cpu→target: the CPU the sampler's thread was "
               f"pinned to and the CPU whose counter it read; \"?→0\": an in-kernel or "
               f"unpinned sampler (no thread CPU) reading CPU 0's counter; a single number: "
               f"a counter of no CPU. An empty cell was not measured. A "
               f"mechanism whose energy counter is frozen or has no energy unit is "
               f"footnoted: it ticked, but sampled no energy."
               f"{predates_caption(rows)}")
    return Table(name="sampler", key=f"sampler-{labels.slug(run.label)}",
                 title=f"Sampler and timer rates, {run.label}", caption=caption,
                 columns=["mechanism", "target", "cpu→target", "harness",
                          *SAMPLER_HEADERS.values(), "n", "note"],
                 align="llll" + "r" * (len(SAMPLER_HEADERS) + 1) + "l", body=body,
                 footnotes=notes.list(), csv_columns=SAMPLER_CSV, records=records)


# ---- the victim side and the idle machine (issue 16) ---------------------------------------

WITHIN_NOISE = "within noise"
TOO_FEW = "too few pairs"
TOO_FEW_NOTE = (f"too few pairs: fewer than {meaning.MIN_CI_N}, so the interval is their min–max, "
                "which covers less than 95% (a QUICK run); not a finding")
VICTIM_NOISE_NOTE = ("within noise: the 95% CI of the difference holds 0 (the victim's own "
                     "noise between windows is larger than what the neighbour costs it); "
                     "not a finding of a cost, nor of none")
IDLE_NOISE_NOTE = ("within noise: the 95% CI of the difference holds 0 (the idle machine's own "
                   "variation between windows is larger than what the sampler adds)")
VICTIM_METHOD = (
    "The victim probe: a thread pinned to the victim CPU spins on RDTSC and records every gap "
    "above a threshold calibrated on its own loop (max(4 × the loop iteration's p99, 200 ns)); "
    "a gap's stolen time is its length minus one normal iteration. Windows in which the "
    "neighbour reads (or samples) alternate with windows in which it does not (AB BA); stolen "
    "ns per read = (stolen ns per second with the neighbour − without) × the window's wall "
    "time ÷ the reads it issued, one sample per pair of windows (median and distribution-free "
    "95% CI). The victim's gap p99 and max are per window with the neighbour (median, CI), "
    "beside the median of the windows without it (baseline). Placement: the victim on the "
    "CPU whose counter is read, from another CPU (an IPI route lands on it), or on another CPU "
    "than the one read. Stand-ins are not the real counters: their cost is that of the "
    "substitute's route (footnoted)")
VICTIM_CSV = ["machine", "online_cpus", "run_id", "date", "harness", "path", "op", "route_target", "target",
              "cpu", "target_cpu", "victim_cpu", "placement", "rate_hz", "reads_per_s",
              "metric", "unit", "status", "median", "ci95_low", "ci95_high", "n",
              "baseline_median", "within_noise", "baseline_drift", "stand_in", "liveness",
              "liveness_note", "reason"]
# the victim's columns without the victim, the window's length for the reads per second
IDLE_CSV = [{"reads_per_s": "window_s"}.get(c, c) for c in VICTIM_CSV
            if c not in ("victim_cpu", "placement")]


def _with_noise(row: dict | None, notes: Notes, note: str) -> str:
    """"5.2 µs (5.19–5.21 µs)"; "within noise [^k]" after it when the CI holds 0,
    "baseline drift, not a saving [^k]" when a cost's CI lies below 0."""
    text, said = median_ci(row), meaning.of(row)
    if said.within_noise:
        text += f" {with_mark(WITHIN_NOISE, notes.mark(note))}"
    elif said.drift:
        text += f" {with_mark(meaning.DRIFT, notes.mark(meaning.DRIFT_NOTE))}"
    elif said.too_few:
        text += f" {with_mark(TOO_FEW, notes.mark(TOO_FEW_NOTE))}"
    return text


ABOVE_NULL_NOISE_NOTE = ("within noise: the 95% CI of the sampler's CPU per tick minus its null "
                         "loop's holds 0 (the bare timer's own CPU per tick varies between "
                         "windows by as much as the reads add); not a finding of a cost, nor "
                         "of none")


def above_null_cell(row: dict | None, notes: Notes) -> str:
    """The sampler's CPU per tick above its null loop, "within noise" when its
    CI holds 0 (sampler, reference-overhead and reference-design tables)."""
    return _with_noise(row, notes, ABOVE_NULL_NOISE_NOTE) if row is not None else DASH


def _baseline_cell(row: dict | None) -> str:
    base = vr.baseline(row)
    if base is None:
        return DASH
    return median_ci({"status": "ok", "unit": row["unit"], "median": base})


def _experiment_notes(e: vr.Experiment, notes: Notes) -> str:
    """The notes of an experiment's rows, each once ("stand-in [^1]; unavailable [^3]")."""
    return "; ".join(dict.fromkeys(w for r in e.rows.values()
                                   for w in row_notes(r, notes).split("; ") if w))


def _victim_records(run: Run, e: vr.Experiment) -> list[dict]:
    w = e.where
    return [{**row_record(run, r), "route_target": w.route, "victim_cpu": w.victim_cpu,
             "placement": w.placement, "window_s": (r.get("parameters") or {}).get("window_s"),
             "rate_hz": w.rate_hz if w.rate_known else None, "reads_per_s": vr.reads_per_s(e),
             "baseline_median": vr.baseline(r),
             "within_noise": meaning.of(r).within_noise if r["status"] == "ok" else None,
             "baseline_drift": meaning.of(r).drift if r["status"] == "ok" else None}
            for r in e.rows.values()]


def _victim_where_cell(w: vr.Where) -> str:
    if w.victim_cpu is None:
        return DASH
    return f"CPU {w.victim_cpu} ({'the target' if w.placement == vr.IS_TARGET else 'elsewhere'})"


def victim_table(run: Run, sampler: bool = False) -> Table | None:
    """Stolen ns per read, the victim's gap p99 and max per route (sampler
    False: table "victim") or per sampler mechanism at 1 kHz (True:
    "victim-sampler"), a line per experiment; None without such rows."""
    exps = vr.victim_experiments(run.rows, sampler=sampler)
    if not exps:
        return None
    notes, body, records = Notes(), [], []
    for e in exps:
        w = e.where
        stolen, p99, gap_max = e.get(vr.STOLEN), e.get(vr.GAP_P99), e.get(vr.GAP_MAX)
        reads = vr.reads_per_s(e)
        first = [labels.op_label(w.op) if sampler else f"{w.path} {labels.op_label(w.op)}",
                 labels.cell_target(w.route), text_table.cpus(e.first)]
        if not sampler:
            first.append(labels.placement({"cpu": w.cpu, "target_cpu": w.target_cpu}))
        body.append([*first, _victim_where_cell(w), w.rate_label,
                     f"{reads:,.0f}".replace(",", " ") if reads is not None else DASH,
                     _with_noise(stolen, notes, VICTIM_NOISE_NOTE),
                     f"{median_ci(p99)} / {_baseline_cell(p99)}" if p99 else DASH,
                     f"{median_and_interval(gap_max)[0]} / {_baseline_cell(gap_max)}"
                     if gap_max else DASH,
                     str(stolen["n"]) if stolen is not None and stolen["status"] == "ok" else DASH,
                     _experiment_notes(e, notes)])
        records += _victim_records(run, e)
    if sampler:
        name, title = "victim-sampler", "What a sampler's ticks cost another CPU"
        what, per = "sampler mechanism at 1 kHz", "tick"
        columns = ["mechanism", "target", "thread CPU"]
        how = ("Stolen per tick: per tick of the sampler, its thread pinned to the CPU given "
               f"({DASH}: unpinned, or an in-kernel timer: ebpf's bpf_timer on the CPU of its "
               "events, one per package; kernel's hrtimer on each package's lead CPU); "
               "victim: the CPU its ticks run on (the target), or another; ticks/s: the "
               "median ticks per second in the windows with the sampler")
    else:
        name, title = "victim", "What a read costs the CPU it reads"
        what, per = "route", "read"
        columns = ["route", "target", "cpu→target", "reader"]
        how = ("Stolen per read: per read of a reader pinned to a CPU (cpu→target: the reader "
               "and the CPU whose counter it reads; reader: same CPU, other CPU or a counter "
               "of no CPU, as the latency tables say); rate: the reader's, flat out or 1 kHz; "
               "reads/s: the median reads per second in the windows with the reader")
    caption = (f"{machine_caption(run)}. What each {what} costs the CPU of the victim probe. "
               f"{VICTIM_METHOD}. {how}. Gap p99 and max: of the lengths of the victim's gaps, "
               f"with the neighbour / without it (many short IPI gaps lower the p99: read it "
               f"beside the stolen time). A "
               f"line whose CI holds 0 says {WITHIN_NOISE}; an experiment that could not run "
               f"shows {DASH} and its reason.{predates_caption(e.first for e in exps)}")
    columns += ["victim", "rate", f"{per}s/s", f"stolen per {per} (95% CI)",
                "victim gap p99 (95% CI) / baseline", "max gap / baseline", "n", "note"]
    return Table(name=name, key=f"{name}-{labels.slug(run.label)}", title=f"{title}, {run.label}",
                 caption=caption, columns=columns,
                 align="l" * (len(columns) - 6) + "rrrrrl", body=body,
                 footnotes=notes.list(), csv_columns=VICTIM_CSV, records=records)


def idle_cost_table(run: Run) -> Table | None:
    """Wakeups per second, busy % and deep idle above the no-sampler baseline
    per mechanism and sampling frequency; None without idle rows."""
    exps = vr.idle_experiments(run.rows)
    if not exps:
        return None
    notes, body, records = Notes(), [], []
    for e in exps:
        w = e.where
        wake, busy, deep = e.get(vr.WAKEUPS), e.get(vr.BUSY), e.get(vr.DEEP_IDLE)
        ns = sorted({str(r["n"]) for r in e.rows.values() if r["status"] == "ok"})
        body.append([labels.op_label(w.op), labels.cell_target(w.route),
                     DASH if w.cpu is None else str(w.cpu), w.rate_label,
                     _with_noise(wake, notes, IDLE_NOISE_NOTE), _baseline_cell(wake),
                     _with_noise(busy, notes, IDLE_NOISE_NOTE), _baseline_cell(busy),
                     _with_noise(deep, notes, IDLE_NOISE_NOTE) if deep is not None else "",
                     "/".join(ns) or DASH, _experiment_notes(e, notes)])
        records += _victim_records(run, e)
    caption = (f"{machine_caption(run)}. What each sampler mechanism costs an otherwise idle "
               f"machine, by sampling frequency: windows with the sampler running alternate "
               f"with windows without it (AB BA); each value is the median of the pairs' "
               f"differences (with − without) and its distribution-free 95% CI, beside the "
               f"median of the windows without it (baseline). Wakeups: interrupts and softirqs "
               f"per second of the whole machine (/proc/interrupts, /proc/softirqs: a bpf_timer "
               f"tick counts twice, its timer interrupt and its HRTIMER softirq); busy: CPU "
               f"time of the whole machine (online CPUs × wall time minus idle time, from the "
               f"cpuidle residency where the kernel has states, else /proc/stat) in % of one "
               f"CPU; deep idle: time in the deepest cpuidle state, in % of the CPU time, where "
               f"the kernel exposes C-states (a VM's idle is the hypervisor's: {DASH} and the "
               f"reason). Thread CPU: the CPU the sampler's thread is pinned to ({DASH}: "
               f"unpinned, or in-kernel timers: ebpf's on the CPU of its events, one per "
               f"package). A difference whose CI holds 0 says "
               f"{WITHIN_NOISE}. Stand-ins are not the real counters (footnoted): their cost is "
               f"that of the substitute's route.{predates_caption(e.first for e in exps)}")
    columns = ["mechanism", "target", "thread CPU", "frequency",
               "wakeups/s above baseline (95% CI)", "baseline wakeups/s",
               "busy % above baseline (95% CI)", "baseline busy %",
               "deep idle above baseline (95% CI)", "n", "note"]
    return Table(name="idle-cost", key=f"idle-cost-{labels.slug(run.label)}",
                 title=f"What a sampler costs an idle machine, {run.label}", caption=caption,
                 columns=columns, align="llll" + "rrrrrr" + "l", body=body,
                 footnotes=notes.list(), csv_columns=IDLE_CSV, records=records)
