"""make report: figures, tables and index.html for one or more runs.

    python -m plots.report [RUN ...] [--out DIR] [--reference-machine M] [--references DIR]
                           [--tables-only]

RUN is a run directory (holding results.jsonl) or a results.jsonl file; the
default is the newest run, results/runs/latest. The report goes to
<first run>/report/ unless --out says otherwise; plots/README.md ("What the
report contains") lists its files.

Exit status 0, or 2 with a message naming the file when the input is bad
(missing directory, invalid results, invalid reference file).
"""

import argparse
import json
import sys
from pathlib import Path

from plots import (figures, htmlpage, labels, report_tables, report_tables_compare,
                   report_tables_overhead, report_tables_stats, tables, tables_latex)
from plots.runs import (REFERENCE_DIR, InputError, Run, RunFileError, default_out,
                        default_run, load_references, load_runs)
from results.files import is_storage_error, storage_error, write_atomic


def pick_reference(runs: list[Run], wanted: str | None) -> int:
    """The index of the reference machine: the first run unless `wanted`
    names one (a 1-based index, or a case-insensitive part of its label,
    CPU model name or run id, matching exactly one run)."""
    if not wanted:
        return 0
    if wanted.isdigit() and 1 <= int(wanted) <= len(runs):
        return int(wanted) - 1
    w = wanted.lower()
    hits = [i for i, r in enumerate(runs)
            if w in r.label.lower() or w in (r.machine.get("cpu_model_name") or "").lower()
            or w == r.run_id.lower()]
    if len(hits) != 1:
        choices = "; ".join(f"{i + 1}: {r.label}" for i, r in enumerate(runs))
        raise InputError(f"--reference-machine {wanted!r} matches {len(hits)} machines "
                         f"(choose one of {choices})")
    return hits[0]


def write_tables(out: Path, all_tables: list[tables.Table]) -> list[str]:
    written = []
    for name in dict.fromkeys(t.name for t in all_tables):
        group = [t for t in all_tables if t.name == name]
        for ext, render in (("md", tables.to_markdown), ("csv", tables.to_csv),
                            ("tex", tables_latex.to_latex)):
            write_atomic(out / f"{name}.{ext}", render(group))
            written.append(f"{name}.{ext}")
    return written


def build(runs: list[Run], refs: list[dict], out: Path, reference: int = 0,
          draw: bool = True) -> dict:
    """Write the report; returns {"figures": [...], "files": [...]}.
    draw=False writes the tables alone (md, csv, tex), without a figure or
    the page: drawing is most of a report's time."""
    out.mkdir(parents=True, exist_ok=True)
    manifest = []

    def figure(make, args, name, alt):
        """make(*args) saved as `name`, when drawing and it draws something."""
        fig = make(*args) if draw else None
        if fig is None:
            return None
        width, height = figures.save(fig, out / name)
        manifest.append({"file": name, "width": width, "height": height, "alt": alt})
        return out / name, alt

    sections, all_tables = [], []

    def section(sid, title, figs, tables, intro=None, always=False):
        """A section of the page with the figures that were drawn and the
        tables that were made (None: nothing to show); left out when it has
        neither, unless `always`."""
        figs, tables = [f for f in figs if f], [t for t in tables if t]
        if figs or tables or always:
            sections.append({"id": sid, "title": title, "intro": intro, "figures": figs,
                             "tables": tables})
            all_tables.extend(tables)

    section("latency", "Latency per operation",
            [figure(figures.latency_figure, (runs, family), f"latency-{family[0]}.png",
                    f"{family[1]}: ns per operation (log scale), each repetition a point "
                    f"over a box") for family in labels.FAMILIES],
            [report_tables.latency_table(run) for run in runs],
            "One figure per path family, a panel per machine; then the latency table of each "
            "machine.")

    section("ladder", "The latency ladder",
            [figure(figures.ladder_figure, (run, refs), f"ladder-{labels.slug(run.label)}.png",
                    f"Latency ladder of {run.label}, published figures beside") for run in runs],
            [], "From one instruction to a powercap read, like the papers' hierarchy; hollow "
                "markers are stand-ins, published figures are drawn beside the rung they "
                "measure.")

    section("reference", "Published figures beside this report",
            [figure(figures.reference_figure, (runs, refs), "reference.png",
                    "Published figures beside this report's machines (ns per operation, log "
                    "scale)")],
            [report_tables_compare.reference_table(runs, refs)
             if any(r["metric"] == "latency" for r in refs) else None,
             *report_tables_overhead.overhead_tables(runs, refs)],
            "Transcribed in results/reference/*.jsonl (see its README for every unit "
            "conversion).", always=True)

    section("machines", "Machines side by side",
            [figure(figures.machines_figure, (runs, reference), "machines.png",
                    f"Machines side by side ("
                    + "; ".join(f"{r.label}: {labels.cpu_count(r.machine)}" for r in runs)
                    + f"), ratios to {runs[reference].label}")],
            [report_tables_compare.machines_table(runs, reference) if len(runs) > 1 else None])

    section("sampler", "The 1 kHz sampler and other rates",
            [figure(figures.sampler_figure, (runs,), "sampler.png",
                    "Achieved rate (Hz) and interval jitter (µs) of the 1 kHz sampler per "
                    "mechanism beside its null timer, and where the run has them the sampler "
                    "above its null loop (CPU per tick, rate: median and 95% CI, hollow where "
                    "not resolved)"),
             figure(figures.overhead_figure, (runs, refs), "overhead.png",
                    "Slowdown of a stress-ng workload under the sampler per mechanism, with its "
                    "95% CI, beside the published tool overheads (\"baseline drift\", hollow: "
                    "a CI below 0, the bare runs moving, never a saving)")],
            [report_tables.sampler_table(run) for run in runs])

    section("stats", "Significance tests", [],
            [*(report_tables_stats.ladder_table(run) for run in runs),
             *(report_tables_stats.overhead_table(run) for run in runs),
             report_tables_stats.machines_table(runs)],
            "The latency ladder, the sampler overhead and the machines, tested as Diamond "
            "& Stoico 2026 test theirs: Shapiro–Wilk, Kruskal–Wallis, Dunn–Bonferroni and "
            "Cliff's delta (results/README.md, \"Statistics of the report\").")

    section("victim", "What a read costs the CPU it reads",
            [figure(figures.victim_figure, (runs,), "victim.png",
                    "Per route: the reader-side latency (ns per read, log scale; gbench and "
                    "criterion, median and 95% CI) beside the time a read steals from the "
                    "victim CPU (ns per read, flat out and at 1 kHz, median and 95% CI; "
                    "hollow: the CI holds 0, within noise, lies below 0, baseline drift and "
                    "not a saving, or too few pairs for a CI; x: not measured)")],
            [t for run in runs for t in (report_tables.victim_table(run),
                                         report_tables.victim_table(run, sampler=True))],
            htmlpage.VICTIM_INTRO)
    section("idle-cost", "What a sampler costs an idle machine",
            [figure(figures.idle_figure, (runs,), "idle-cost.png",
                    "Per sampler mechanism against the sampling frequency (log): wakeups per "
                    "second and busy % above the no-sampler baseline (and deep idle where the "
                    "machine has C-states), median and 95% CI; dashed: a stand-in")],
            [report_tables.idle_cost_table(run) for run in runs], htmlpage.IDLE_INTRO)

    files = write_tables(out, all_tables)
    if not draw:
        return {"figures": [], "files": files}
    files = [m["file"] for m in manifest] + files + ["figures.json"]
    write_atomic(out / "figures.json", json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
    write_atomic(out / "index.html", htmlpage.page(runs, sections, files, len(refs)))
    return {"figures": manifest, "files": ["index.html"] + files}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m plots.report",
                                     description="Write the report of one or more runs.")
    parser.add_argument("runs", nargs="*", metavar="RUN",
                        help="run directories or results.jsonl files (default: results/runs/latest)")
    parser.add_argument("--out", help="output directory (default: <run>/report for one run; "
                        "results/reports/<time>-<n>-runs/ for several)")
    parser.add_argument("--reference-machine", metavar="M",
                        help="machine the ratios are relative to: 1-based index, or part of its "
                             "label, model name or run id (default: the first run)")
    parser.add_argument("--references", default=str(REFERENCE_DIR), metavar="DIR",
                        help="published reference rows (default: %(default)s)")
    parser.add_argument("--tables-only", action="store_true",
                        help="the tables alone (md, csv, tex): no figure, no index.html")
    args = parser.parse_args(argv)
    try:
        run_args = args.runs or [default_run()]
        runs = load_runs(run_args)
        refs = load_references(args.references)
        reference = pick_reference(runs, args.reference_machine)
    except (InputError, RunFileError) as e:
        print(f"report: {e}", file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else default_out(run_args)
    try:
        done = build(runs, refs, out, reference, draw=not args.tables_only)
    except KeyboardInterrupt:
        print(f"report: interrupted; {out}/ is incomplete (make report draws it again)",
              file=sys.stderr)
        return 130
    except OSError as e:
        if not is_storage_error(e):
            raise
        print(f"report: {storage_error(e, out)} ({out}/ is incomplete)", file=sys.stderr)
        return 1
    print(f"report: {len(done['files'])} files in {out}/ " + (
        "(the tables alone)" if args.tables_only
        else f"({len(done['figures'])} figures; open {out}/index.html)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
