"""index.html: the whole report on one self-contained page, viewable offline.

Figures are embedded as base64 data URIs and tables as HTML; the style sheet
is inline; nothing is fetched from anywhere (links to the .md / .csv / .tex
files beside it are relative).
"""

import base64
import html
from pathlib import Path

from results import findings, liveness, rows
from results.schedule import STEPS

from plots import labels, report_tables
from plots.runs import Run
from plots.tables import to_html

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto;
       max-width: 1250px; padding: 0 1em; color: #1a1a1a; line-height: 1.45; }
h1 { font-size: 1.6em; } h2 { border-bottom: 1px solid #ccc; padding-bottom: .2em; margin-top: 2em; }
figure { margin: 1.5em 0; } figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { font-size: .9em; color: #444; }
table { border-collapse: collapse; margin: 1em 0; font-size: .85em; }
caption { caption-side: top; text-align: left; font-size: .95em; padding-bottom: .4em; }
th, td { padding: .2em .6em; border-bottom: 1px solid #e3e3e3; vertical-align: top; }
thead th { border-bottom: 2px solid #555; }
td.dash { color: #666; }
sup.mark { color: #0645ad; }
.stand-in { color: #5b3f8f; font-style: italic; }
ol.notes { font-size: .82em; color: #333; }
.emulated { color: #b00020; font-weight: bold; }
.unresolved { color: #555; }
.frozen { color: #7a4b00; font-weight: bold; }
.question { font-style: italic; }
.header-box { border: 1px solid #999; background: #f6f6f6; padding: 0.2em 1em; margin: 1em 0; }
.machines td, .machines th { text-align: left; }
.nowrap { white-space: nowrap; }
nav a { margin-right: 1em; }
"""

# the intros of the victim-side sections (issue 16): what the numbers are
VICTIM_INTRO = (
    "Every other figure is taken from the reader's side. Here, what a read costs another CPU: "
    "a victim probe pinned to one CPU spins on RDTSC and counts every gap above a threshold "
    "calibrated on its own loop (max(4 × the iteration's p99, 200 ns)); a gap's stolen time is "
    "its length minus one normal iteration. A reader pinned to a CPU reads a route flat out or "
    "at 1 kHz in windows that alternate with windows in which it reads nothing; stolen ns per "
    "read is the stolen time per second with the reader minus without, times the window, "
    "divided by its reads (one sample per pair of windows, median and 95% CI). The victim sits "
    "on the CPU whose counter is read from another CPU (an IPI route lands on it), or on "
    "another CPU. A CI that holds 0 is within noise, and fewer than 6 pairs are too few for a "
    "CI (a QUICK run): both hollow in the figure, neither a finding. Stand-ins "
    "(/dev/cpu/N/cpuid for the msr device, msr/tsc/ for the RAPL perf events, a sysfs counter "
    "for powercap) are not the real counters: they take the same kernel route, and their cost "
    "is the substitute's. The second table puts each sampler mechanism at 1 kHz in the "
    "reader's place (stolen ns per tick).")
IDLE_INTRO = (
    "Each sampler mechanism at 10 Hz to 10 kHz on an otherwise idle machine, in windows that "
    "alternate with windows without it: wakeups (interrupts and softirqs of the whole machine "
    "per second), CPU time (busy % of one CPU) and, where the kernel exposes cpuidle states, "
    "the deepest C-state's residency, each as the difference with − without (median of the "
    "pairs and 95% CI) beside the no-sampler baseline. A virtual machine exposes no C-states "
    "(its idle is the hypervisor's): there, wakeups and CPU time stand in. Stand-in mechanisms "
    "(dashed) read a substitute counter, not the real one.")


# The question each section of the page answers, one line above its figures.
QUESTIONS = {
    "latency": "What does one read of a counter cost on each route, and do the two harnesses "
               "agree?",
    "ladder": "Where does each route sit between one instruction and a sysfs read, beside the "
              "papers' figures?",
    "reference": "How do this machine's figures compare with the published ones?",
    "machines": "Which machine reads each route faster?",
    "sampler": "Does a 1 kHz sampler keep its rate on each mechanism, what does it cost per "
               "tick, and how much does it slow a workload?",
    "stats": "Which of the differences above are significant?",
    "victim": "What does a read, or a sampler's tick, cost the CPU it lands on?",
    "idle-cost": "What does a sampler cost an idle machine, by sampling frequency?",
}


def img(png: Path, alt: str) -> str:
    data = base64.b64encode(png.read_bytes()).decode("ascii")
    return f'<img src="data:image/png;base64,{data}" alt="{html.escape(alt)}">'


# short values that read wrongly when split at a hyphen or space ("2026-\n11-24")
UNBROKEN_COLUMNS = {"CPUs", "kernel", "run", "date", "rows"}


def machines_list(runs: list[Run]) -> str:
    columns = ["machine", "CPU", "CPUs", "kernel", "platform", "run", "date", "rows", "file"]
    out = ['<table class="machines" id="machines-list"><caption>The machines of this report, '
           "one per run: CPU, online CPUs (vCPUs in a virtual machine), kernel, platform, "
           "run, date, rows and results file.</caption><thead><tr>"
           + "".join(f'<th scope="col">{c}</th>' for c in columns) + "</tr></thead><tbody>"]
    for run in runs:
        m = run.machine
        platform = html.escape(labels.platform(m))
        if run.emulated or labels.is_busy(m):
            platform = f'<span class="emulated">{platform}</span>'
        cells = [html.escape(run.label),
                 f"{html.escape(m.get('cpu_vendor') or '—')}, "
                 f"{html.escape(m.get('cpu_model_name') or '—')}",
                 html.escape(labels.cpu_count(m)), html.escape(m.get("kernel") or "—"), platform,
                 html.escape(run.run_id), run.date, str(len(run.rows)), html.escape(str(run.path))]
        out.append("<tr>" + "".join(
            f'<td class="nowrap">{c}</td>' if name in UNBROKEN_COLUMNS else f"<td>{c}</td>"
            for name, c in zip(columns, cells)) + "</tr>")
    out.append("</tbody></table>")
    return "\n".join(out)


def liveness_paragraphs(runs: list[Run]) -> list[str]:
    """A warning per run whose rows read a dead counter, and one line per run
    of schema 1 (its verdicts are unknown)."""
    out = []
    for run in runs:
        dead = [r for r in run.rows if liveness.is_dead(r)]
        if dead:
            targets = ", ".join(dict.fromkeys(r.get("target") or r["op"] for r in dead))
            out.append(f'<p class="frozen">{html.escape(run.label)}: {len(dead)} rows read a '
                       f"counter that is frozen or has no energy unit ({html.escape(targets)}): "
                       "their latency is the route's cost, but the counter yields no energy "
                       "(footnotes of the tables; dotted in the figures).</p>")
        busy = labels.contention_note(run.machine)
        if busy:
            reason = run.machine["contention"]["reason"]
            out.append(f'<p class="frozen">{html.escape(run.label)}: {html.escape(busy)}. '
                       f"{html.escape(reason)} (results/contention.py; machine.json, "
                       '"contention").</p>')
        if any(liveness.predates_probe(r) for r in run.rows):
            out.append(f"<p>{html.escape(run.label)}: run {html.escape(run.run_id)} predates "
                       f"liveness probing (schema 1): {html.escape(liveness.PREDATES_NOTE)}.</p>")
    return out


def header_lines(run: Run) -> list[tuple[str, bool]]:
    """What a reader must know before any figure of `run`, as (text,
    warning): QUICK or full, the steps it ran, whether the machine was busy,
    whether any energy counter here is real and live."""
    kind = rows.run_of(run.rows)
    if kind is None:
        out = [("Mode and steps not recorded (a harness run on its own, or a run written "
                "before runs recorded them).", False)]
    else:
        quick = kind["mode"] == rows.QUICK
        out = [("A QUICK run (make bench-all QUICK=1): short blocks and windows, few pairs; a "
                "smoke test, whose rows resolve less and whose overhead rows are never "
                "findings." if quick else "A full run (make bench-all).", quick)]
        skipped = [s for s in STEPS if s not in kind["steps"]]
        out.append((f"Steps: {', '.join(kind['steps'])}"
                    + (f"; not run: {', '.join(skipped)}." if skipped else " (all of them)."),
                    bool(skipped)))
    busy = labels.contention_note(run.machine)
    if busy:
        out.append((f"The machine was busy: {busy}.", True))
    elif "contention" in run.machine:
        out.append(("The machine was quiet: no other work above results/contention.py's "
                    "thresholds during the steps.", False))
    energy = [r for r in run.rows if r["status"] == "ok" and r.get("liveness") is not None]
    live = sorted({r.get("target") or r["op"] for r in energy
                   if r["liveness"] == liveness.LIVE and not r.get("stand_in")})
    if live:
        out.append((f"Live energy counters: {', '.join(live)}.", False))
    elif energy or any(r.get("stand_in") for r in run.rows):
        out.append(("No RAPL here: every energy route was measured on a stand-in or on a "
                    "counter that never advances. Their figures are the route's cost, not "
                    "energy, and not what real RAPL costs.", True))
    return out


def header_box(runs: list[Run]) -> str:
    parts, warning = [], ' class="frozen"'
    for run in runs:
        items = "".join(f"<li{warning if warn else ''}>{html.escape(text)}</li>"
                        for text, warn in header_lines(run))
        parts.append(f"<p><strong>{html.escape(run.label)}</strong>, run "
                     f"{html.escape(run.run_id)}:</p><ul>{items}</ul>")
    return f'<div class="header-box" id="about-this-run">{"".join(parts)}</div>'


def findings_sections(runs: list[Run]) -> list[tuple[str, str, str]]:
    """(anchor, title, HTML) of each run's findings (results/findings.py,
    the same sentences make bench-all prints last); grey: not a finding."""
    out = []
    for i, run in enumerate(runs):
        title = "Findings" + (f", {run.label}" if len(runs) > 1 else "")
        grey = ' class="unresolved"'
        items = "".join(f"<li{'' if f.resolved else grey}>{html.escape(f.text)}</li>"
                        for f in findings.of(run.rows))
        anchor = "findings" if i == 0 else f"findings-{i + 1}"
        out.append((anchor, title, f'<h2 id="{anchor}">{html.escape(title)}</h2>'
                    f"<ul>{items or '<li>none: no row of this run compares</li>'}</ul>"))
    return out


def page(runs: list[Run], sections: list[dict], files: list[str], n_refs: int) -> str:
    """sections: [{"id", "title", "intro", "figures": [(png path, alt)], "tables": [Table]}]"""
    found = findings_sections(runs)
    body = [f"<h1>raplbench report: {html.escape(', '.join(r.label for r in runs))}</h1>",
            header_box(runs)]
    if any(r.emulated for r in runs):  # said before anything is read as a finding
        body.append('<p class="emulated">Some rows come from an emulated CPU (QEMU TCG): their '
                    "timings are QEMU's, not hardware figures.</p>")
    body += [*(block for _, _, block in found),
             "<p>How long it takes to get an energy or performance counter out of each machine, "
            "by every access path; each figure's points are the repetitions of one benchmark, "
            "tables give medians with a distribution-free 95% confidence interval. Rows that "
            "could not be measured show — and say why; stand-ins (a substitute of the same "
            "kernel route where the real counter is missing) are marked, and so are counters "
            "that are frozen or have no energy unit.</p>",
             machines_list(runs)]
    body += liveness_paragraphs(runs)
    body.append(f"<p>{n_refs} published reference rows from results/reference/.</p>")
    targets = ([(anchor, title) for anchor, title, _ in found]
               + [(s["id"], s["title"]) for s in sections] + [("files", "Files")])
    body.append('<nav aria-label="Sections">' + "".join(
        f'<a href="#{anchor}">{html.escape(title)}</a>' for anchor, title in targets) + "</nav>")
    for s in sections:
        body.append(f'<h2 id="{s["id"]}">{html.escape(s["title"])}</h2>')
        if s["id"] in QUESTIONS:
            body.append(f'<p class="question">{html.escape(QUESTIONS[s["id"]])}</p>')
        if s.get("intro"):
            body.append(f"<p>{html.escape(s['intro'])}</p>")
        for png, alt in s.get("figures", []):
            body.append(f"<figure>{img(png, alt)}<figcaption>{html.escape(alt)} "
                        f"({html.escape(png.name)})</figcaption></figure>")
        for t in s.get("tables", []):
            body.append(to_html(t))
    body.append("<h2 id=\"files\">Files</h2><ul>" + "".join(
        f'<li><a href="{html.escape(f)}">{html.escape(f)}</a></li>' for f in files) + "</ul>")
    body.append(f"<p>{html.escape(report_tables.MEDIAN_NOTE)}. Generated by "
                "<code>python -m plots.report</code>; see plots/README.md.</p>")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>raplbench report</title><style>{STYLE}</style></head><body>\n"
            + "\n".join(body) + "\n</body></html>\n")
