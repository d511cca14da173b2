"""Published figures -> results/reference/*.jsonl (schema v1, harness "reference").

    python -m plots.transcribe_references [--out results/reference]

The papers' tables are copied below exactly as printed (units and rounding of
the paper), then converted; results/reference/README.md explains every
choice and how each field of a reference row is filled. plots/test_reference.py
checks the files are this script's output, that they validate, and that the
numbers below match the tables in ../shared/papers/ when the papers are there.
"""

import argparse
import sys
from pathlib import Path

from results import rows

OUT = Path(__file__).resolve().parent.parent / "results" / "reference"


def machine(vendor=None, model_name=None, kernel=None) -> dict:
    return {**dict.fromkeys(("hostname", "cpu_vendor", "cpu_family", "cpu_model",
                             "cpu_stepping", "cpu_model_name", "microcode", "kernel",
                             "hypervisor", "smt", "governor", "boost", "tsc_khz",
                             "mitigations")),
            "cpu_vendor": vendor, "cpu_model_name": model_name, "kernel": kernel}


def reference_row(*, run_id, timestamp, machine, path, op, target, metric, source,
                  n=0, iterations=None, **stats) -> dict:
    unknown = set(stats) - {"mean", "median", "stddev", "min", "max", "ci95_low", "ci95_high"}
    if unknown:
        raise ValueError(f"not a published statistic: {sorted(unknown)}")
    row = {
        "schema_version": rows.SCHEMA_VERSION, "run_id": run_id, "timestamp": timestamp,
        "machine": machine, "harness": "reference", "path": path, "op": op,
        "target": target, "role": rows.MEASURED, "cpu": None, "target_cpu": None,
        "stand_in": None,
        "liveness": None, "liveness_note": None,  # a published figure: no verdict of ours
        "metric": metric, "unit": rows.METRIC_UNITS[metric], "samples": [], "n": n,
        "iterations": iterations,
        "mean": None, "median": None, "stddev": None, "min": None, "max": None,
        "p05": None, "p95": None, "ci95_low": None, "ci95_high": None,
        **stats, "status": "ok", "reason": None, "source": source,
    }
    return {field: row[field] for field in rows.FIELDS}


# ---- Diamond & Stoico 2026 -------------------------------------------------------
# System under test (section 4.1): Intel NUC8i7HVK, "Intel 8809G CPU at 3.1 to
# 4.2 GHz", NixOS 24.04 (kernel version not stated). The paper gives no date
# beyond the year: the timestamp is 1 January 2026.

DS_RUN = "reference:diamond-stoico-2026"
DS_TIME = "2026-01-01T00:00:00Z"
DS_MACHINE = machine("GenuineIntel", "Intel 8809G")
DS_WHERE = "Intel 8809G"

# Table 3: execution time in ms of one batch of 100,000 executions, 15 batches
# each (section 3.3). Columns as printed: mean, std, min, 25%, 50%, 75%, max,
# and the paper's per-execution row "50%/100k" (ms).
DS_TABLE3_BATCHES = 100_000
DS_TABLE3_REPS = 15
DS_TABLE3 = {
    # heading as printed: (path, op, target), (mean, std, min, p25, median, p75, max), per-op
    "cpuid 0x1 0": (("kinsn", "cpuid:0x1", None), (13.11, 0.07, 12.99, 13.06, 13.13, 13.17, 13.21), "0.00013"),
    "mov eax ebx": (("kinsn", "mov", None), (0.03, 0.00, 0.03, 0.03, 0.03, 0.03, 0.04), "3.00e-7"),
    "nop": (("kinsn", "nop", None), (0.03, 0.00, 0.03, 0.03, 0.03, 0.03, 0.03), "3.00e-7"),
    "rdmsr 0x611": (("kinsn", "rdmsr:0x611", "0x611"), (55.37, 1.34, 52.94, 54.24, 55.68, 56.63, 56.89), "0.00056"),
    "rdmsr 0x639": (("kinsn", "rdmsr:0x639", "0x639"), (53.73, 1.68, 49.57, 52.84, 53.81, 54.69, 56.57), "0.00054"),
    "rdmsr 0x641": (("kinsn", "rdmsr:0x641", "0x641"), (33.31, 2.88, 28.53, 31.92, 32.74, 34.65, 39.50), "0.00033"),
    "rdmsr 0x619": (("kinsn", "rdmsr:0x619", "0x619"), (23.96, 0.56, 23.29, 23.50, 23.80, 24.29, 25.05), "0.00024"),
    "rdmsr 0x19C": (("kinsn", "rdmsr:0x19c", "0x19c"), (22.73, 0.44, 22.17, 22.25, 22.87, 23.09, 23.39), "0.00023"),
    "rdmsr 0x17": (("kinsn", "rdmsr:0x17", "0x17"), (23.01, 0.48, 22.21, 22.55, 23.17, 23.41, 23.64), "0.00023"),
    "proc_read": (("proc-read", "read", None), (67.61, 7.52, 64.20, 64.66, 65.09, 66.01, 93.39), "0.00065"),
    "sys_read": (("sys-read", "read", None), (141.72, 12.24, 134.01, 134.88, 135.74, 143.20, 179.99), "0.00136"),
}


def ms_per_batch_to_ns_per_op(ms: float) -> float:
    """ms per batch of 100,000 operations -> ns per operation: x 1e6 / 1e5 = x 10."""
    return round(ms * 1e6 / DS_TABLE3_BATCHES, 6)


def diamond_stoico_table3() -> list[dict]:
    out = []
    for heading, ((path, op, target), printed, per_op) in DS_TABLE3.items():
        mean, std, lo, _p25, median, _p75, hi = printed
        ns = {k: ms_per_batch_to_ns_per_op(v) for k, v in
              (("mean", mean), ("stddev", std), ("min", lo), ("median", median), ("max", hi))}
        source = (f"Diamond & Stoico 2026, Table 3 ({DS_WHERE}): {heading}, median {median:.2f} ms "
                  f"per batch of 100,000 = {ns['median']:g} ns per operation (the paper's "
                  f"per-execution row: {per_op} ms); mean, std, min, max converted likewise "
                  f"(x 10); 15 batches; in-kernel loop of the Ref_Rapl_Micro_Bench module")
        out.append(reference_row(run_id=DS_RUN, timestamp=DS_TIME, machine=DS_MACHINE,
                                 path=path, op=op, target=target, metric="latency",
                                 n=DS_TABLE3_REPS, iterations=DS_TABLE3_BATCHES,
                                 source=source, **ns))
    return out


# Table 1: the last row of each benchmark block, the relative overhead (%) of
# the median profiling time with the tool over the median without any tool
# (No_T), 15 runs per treatment, sampling at 1 kHz. Columns as printed:
# No_T, R_K, R_U, Perf, PJ, Tur, Sca, CC (No_T, 0.00 by definition, is left out).
DS_TABLE1_TOOLS = ("Ref_Rapl_Kernel", "Ref_Rapl_User", "Perf", "PowerJoular", "Turbostat",
                   "Scaphandre", "CodeCarbon")
DS_TABLE1_RELATIVE = {
    "bt": (0.00, 0.04, -0.70, 0.38, 1.67, 6.97, 11.16, 16.60),
    "cg": (0.00, -0.17, -0.20, 0.69, 3.31, 8.77, 17.60, 15.57),
    "ep": (0.00, 0.99, 2.93, 4.26, 8.88, 14.37, 28.38, 46.75),
    "ft": (0.00, 0.26, -0.11, -1.00, -0.87, 4.15, 3.81, 9.32),
    "is": (0.00, 0.03, 0.27, 1.02, 1.87, 6.93, 4.81, 6.37),
    "mg": (0.00, 0.00, -0.04, 0.25, 0.82, 2.73, 4.34, 5.38),
}


def diamond_stoico_table1() -> list[dict]:
    out = []
    for bench, printed in DS_TABLE1_RELATIVE.items():
        for tool, pct in zip(DS_TABLE1_TOOLS, printed[1:]):
            source = (f"Diamond & Stoico 2026, Table 1 ({DS_WHERE}): {tool} on NAS {bench} at "
                      f"1 kHz, relative time overhead {pct:.2f} % (median run time with the "
                      f"tool over the median without, 15 runs each); a slowdown of the "
                      f"measured workload, not the sampler's share of one CPU")
            out.append(reference_row(run_id=DS_RUN, timestamp=DS_TIME, machine=DS_MACHINE,
                                     path="sampler", op=tool, target=bench,
                                     metric="overhead_pct", n=15, source=source, median=pct))
    return out


# ---- Raffin & Trystram 2024 ------------------------------------------------------
# Table III, "time to read one RAPL counter (95% confidence interval,
# microseconds)", measured with Criterion (section V-C). Machines: a Lenovo
# Thinkpad L15 Gen1 laptop, Ubuntu 22.04, Linux 6.1 (its CPU is not stated);
# two AMD EPYC 7702 and two Intel Xeon E5-2680 v4 servers, RHEL, Linux 4.18.0
# (section V-A1). The timestamp is the HAL preprint's v1 date, 26 Jan 2024.
# The eBPF row is "N/A" in the paper and is not transcribed.

RT_RUN = "reference:raffin-trystram-2024"
RT_TIME = "2024-01-26T00:00:00Z"
RT_MACHINES = {
    "recent laptop": ("Lenovo Thinkpad L15 Gen1 laptop, Linux 6.1; CPU not stated",
                      machine(kernel="6.1")),
    "AMD server": ("2x AMD EPYC 7702, Linux 4.18.0",
                   machine("AuthenticAMD", "AMD EPYC 7702", "4.18.0")),
    "Intel server": ("2x Intel Xeon E5-2680 v4, Linux 4.18.0",
                     machine("GenuineIntel", "Intel Xeon E5-2680 v4", "4.18.0")),
}
# mechanism as printed -> the local (path, op) it stands beside, and why
RT_MAPPING = {
    "powercap": (("powercap", "pread"),
                 "paired with the local kept-open pread of energy_uj (the paper does not "
                 "say whether the file is reopened; open-read-close is shown beside it)"),
    "perf-events": (("perf", "read"), "paired with the local read() of one perf event"),
    "msr": (("msr-dev", "pread"), "paired with the local pread of /dev/cpu/N/msr"),
}
RT_TABLE3 = {  # mechanism: {machine column: (low, high) in microseconds}
    "powercap": {"recent laptop": (1.966, 2.106), "AMD server": (6.083, 6.117),
                 "Intel server": (4.230, 4.463)},
    "perf-events": {"recent laptop": (0.5371, 0.5385), "AMD server": (0.4990, 0.4993),
                    "Intel server": (0.7376, 0.7377)},
    "msr": {"recent laptop": (0.5391, 0.5688), "AMD server": (4.437, 4.448),
            "Intel server": (2.149, 2.348)},
}


def us_to_ns(us: float) -> float:
    """microseconds -> nanoseconds: x 1000."""
    return round(us * 1000, 6)


def raffin_trystram_table3() -> list[dict]:
    out = []
    for mechanism, by_machine in RT_TABLE3.items():
        (path, op), mapping = RT_MAPPING[mechanism]
        for column, (low, high) in by_machine.items():
            where, the_machine = RT_MACHINES[column]
            lo_ns, hi_ns = us_to_ns(low), us_to_ns(high)
            source = (f"Raffin & Trystram 2024, Table III ({where}): {mechanism}, time to read "
                      f"one RAPL counter, 95% confidence interval [{low}, {high}] µs = "
                      f"[{lo_ns:g}, {hi_ns:g}] ns (Criterion; no point estimate printed); "
                      f"{mapping}")
            out.append(reference_row(run_id=RT_RUN, timestamp=RT_TIME, machine=the_machine,
                                     path=path, op=op, target=None, metric="latency",
                                     source=source, ci95_low=lo_ns, ci95_high=hi_ns))
    return out


FILES = {
    "diamond-stoico-2026.jsonl": lambda: diamond_stoico_table3() + diamond_stoico_table1(),
    "raffin-trystram-2024.jsonl": raffin_trystram_table3,
}


def write(out_dir=OUT) -> list[Path]:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, build in FILES.items():
        rows.write_jsonl(build(), out_dir / name)
    return [out_dir / name for name in FILES]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m plots.transcribe_references",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=OUT, help="directory to write (default: %(default)s)")
    args = parser.parse_args(argv)
    for path in write(args.out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
