"""make gbench-effect: does Google Benchmark's build change ubench's figures?

    python -m results.gbench_effect --a DEBIAN_UBENCH --b NDEBUG_UBENCH
        [--pairs 6] [--filter REGEX] [--repetitions 10] [--min-time 0.1] [--json FILE]

Debian's libbenchmark 1.7.1 is built without NDEBUG, ubench's own build of
the same source with it (README.md, "Google Benchmark", says why that can
hardly matter). This measures it: the same benchmarks, run by a ubench
linked to each library, in pairs, the order alternating (A B, B A, A B,
...) so that the slow drifts of a VM weigh on both alike.

Per run and benchmark: the median of its repetitions, of the figure the
suite reports (the user counter named by the plan row's metric where the
benchmark sets one, as uinsn's "latency", else real_time), and of real_time
(the time per iteration Google Benchmark itself measures). Both builds time
one plan, written once by raplbench-plan. Per benchmark: the median of
each build's run medians, the ratio B/A of each pair (median, min, max),
and each build's own run-to-run spread, the noise the ratio is judged
against. A benchmark differs beyond noise when every pair's ratio lies on
the same side of 1 and the median ratio lies outside both builds' own
spread; otherwise "within noise".

Exit status: 0 (the table printed, whatever it says), 2 when a run fails or
an argument is wrong.
"""

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from results import gbench, markdown, plan
from results.latency_steps import PLANNER, leg_order

# A trivial instruction (nop, mov: the per-iteration cost is a few clock
# reads), a plain load (the eBPF mmap path), and system-call paths: a sysfs
# pread (the powercap route, or its stand-in) and a perf read, on the same CPU.
DEFAULT_FILTER = (r"^(uinsn/(nop|mov)/.*|powercap/pread/.*|perf/read/.*@0->0"
                  r"|ebpf-mmap/load/.*@0->0)$")


def run_once(binary: str, bench_filter: str, repetitions: int, min_time: float,
             workdir: Path) -> tuple[dict, dict[str, dict[str, float]]]:
    """One ubench run: (Google Benchmark's context, {bench: {figure: median
    of the repetitions, "iterations": the fewest iterations of a
    repetition}}); see run_medians. RuntimeError when ubench fails."""
    out, plan_file = workdir / "gbench.json", workdir / "plan.json"
    if not plan_file.exists():
        done = subprocess.run([str(PLANNER), str(plan_file)], stderr=subprocess.PIPE, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"{PLANNER}: exit status {done.returncode}: {done.stderr[-2000:]}")
    cmd = [binary, f"--raplbench_plan={plan_file}", f"--benchmark_out={out}",
           "--benchmark_out_format=json", f"--benchmark_filter={bench_filter}",
           f"--benchmark_repetitions={repetitions}", f"--benchmark_min_time={min_time}",
           "--benchmark_enable_random_interleaving=true"]
    done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit status {done.returncode}: {done.stderr[-2000:]}")
    gb = gbench.load(out)
    return gb["context"], run_medians(gb, plan.load(plan_file, gbench.HARNESS))


def library(context: dict) -> str:
    """What a ubench run says of its Google Benchmark: its own words
    (context "raplbench_gbench_library") and the library's build type."""
    words = context.get("raplbench_gbench_library", "(an older ubench: it does not say)")
    return f"{words} (library_build_type: {context.get('library_build_type', '?')})"


def run_medians(gb: dict, plan_rows: list[dict]) -> dict[str, dict[str, float]]:
    """{bench: {figure: median over repetitions, "iterations": the fewest
    iterations in one repetition}} of one Google Benchmark JSON, for the
    plan's ok rows that ran without error: the figure is its metric's
    counter where the benchmark sets one, and real_time. A repetition is one
    batch: the library's code runs once per repetition, around the timed
    loop."""
    medians: dict[str, dict[str, float]] = {}
    for p in plan_rows:
        runs = gbench.repetitions(gb, p["id"])
        if p["status"] != "ok" or not runs or any(r.get("error_occurred") for r in runs):
            continue
        figures = medians.setdefault(p["id"], {})
        for figure in dict.fromkeys([p["metric"], "real_time"]):
            if figure == "real_time" or figure in runs[0]:
                figures[figure] = statistics.median(gbench.sample(r, figure) for r in runs)
        figures["iterations"] = min(r["iterations"] for r in runs)
    return medians


def compare(a_runs: list[dict], b_runs: list[dict]) -> list[dict]:
    """Per (bench, figure) measured in every run of both builds: the medians
    of each build, the pairs' ratios B/A and the verdict (module doc)."""
    rows = []
    pairs = list(zip(a_runs, b_runs))
    for bench in a_runs[0] if a_runs else {}:
        for figure in a_runs[0][bench]:
            if figure == "iterations":
                continue
            try:
                a = [run[bench][figure] for run in a_runs]
                b = [run[bench][figure] for run in b_runs]
            except KeyError:
                continue  # not measured in every run
            if min(a + b) <= 0:
                continue  # no ratio (a difference of two timings, such as ns_per_op, can be <= 0)
            ratios = [rb[bench][figure] / ra[bench][figure] for ra, rb in pairs]
            ratio = statistics.median(ratios)
            noise = max(max(a) / min(a), max(b) / min(b))  # each build's own spread
            one_side = all(r > 1 for r in ratios) or all(r < 1 for r in ratios)
            beyond = one_side and not (1 / noise <= ratio <= noise)
            iterations = min(run[bench]["iterations"] for run in a_runs + b_runs)
            rows.append({"bench": bench, "figure": figure, "pairs": len(ratios),
                         "iterations": iterations,
                         "a_median": statistics.median(a), "b_median": statistics.median(b),
                         "ratio_median": ratio, "ratio_min": min(ratios),
                         "ratio_max": max(ratios), "noise": noise,
                         "verdict": (f"B {'slower' if ratio > 1 else 'faster'} by "
                                     f"{abs(ratio - 1) * 100:.1f}%") if beyond
                         else "within noise"})
    return rows


def format_table(rows: list[dict], a_name: str, b_name: str) -> str:
    """The comparison as a Markdown table."""
    lines = [f"A = {a_name}", f"B = {b_name}", "",
             *markdown.table(
                 ["benchmark", "figure", "A median", "B median", "B/A median [min, max]",
                  "run-to-run max/min", "iterations per batch", "verdict"],
                 [[r["bench"], r["figure"], f"{r['a_median']:.4g} ns", f"{r['b_median']:.4g} ns",
                   f"{r['ratio_median']:.3f} [{r['ratio_min']:.3f}, {r['ratio_max']:.3f}]",
                   f"{r['noise']:.3f}", f"≥ {r['iterations']}", r["verdict"]] for r in rows],
                 align="llrrlrrl")]
    pairs = rows[0]["pairs"] if rows else 0
    lines += ["", f"{pairs} pairs, order alternating (A B, B A, ...); medians over runs of "
              "each run's median over its repetitions; run-to-run max/min: the larger of "
              "the two builds' max/min of their run medians (the noise); iterations per batch: "
              "the fewest of any repetition (the library's own code runs once per batch, "
              "so it weighs on a figure divided by that count)."]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m results.gbench_effect",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--a", required=True, help="ubench linked to Debian's libbenchmark")
    parser.add_argument("--b", required=True, help="ubench linked to the NDEBUG build")
    parser.add_argument("--pairs", type=int, default=6)
    parser.add_argument("--filter", default=DEFAULT_FILTER, help="--benchmark_filter")
    parser.add_argument("--repetitions", type=int, default=10)
    parser.add_argument("--min-time", type=float, default=0.1,
                        help="--benchmark_min_time, seconds (Google Benchmark 1.7.1)")
    parser.add_argument("--json", type=Path, help="also write the rows and every run here")
    args = parser.parse_args(argv)
    if args.pairs < 2:
        parser.error("--pairs must be at least 2")
    for label in ("a", "b"):
        binary = getattr(args, label)
        if not Path(binary).is_file():
            parser.error(f"{binary} not found: build it first (make gbench-effect does)")
    runs, names = {"a": [], "b": []}, {}
    with tempfile.TemporaryDirectory(prefix="gbench-effect.") as tmp:
        for pair, label in leg_order(["a", "b"], args.pairs):  # A B, B A, ...
            print(f"pair {pair}/{args.pairs}: {label.upper()}", file=sys.stderr, flush=True)
            try:
                context, medians = run_once(getattr(args, label), args.filter,
                                            args.repetitions, args.min_time, Path(tmp))
            except (RuntimeError, OSError, ValueError) as e:
                print(e, file=sys.stderr)
                return 2
            runs[label].append(medians)
            names[label] = library(context)
    if names["a"] == names["b"]:
        print(f"note: both builds link the same library ({names['a']}): the comparison "
              "shows the noise alone", file=sys.stderr)
    rows = compare(runs["a"], runs["b"])
    if not rows:
        print(f"no benchmark matching {args.filter!r} ran in every run", file=sys.stderr)
        return 2
    print(format_table(rows, f"{args.a}: {names['a']}", f"{args.b}: {names['b']}"))
    if args.json:
        args.json.write_text(json.dumps({"a": names["a"], "b": names["b"], "rows": rows,
                                         "runs": runs}, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
