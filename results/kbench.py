"""kbench (the kernel module) -> result rows.

Input is what kbench/kbench-read prints (see kbench/kbench_main.c for the
per-operation report format): sections opened by "=== <kind> <name>" lines.

    === op /proc/kbench/rdmsr_0x611      one operation's report
    === pinned 0                         the CPU the round trips ran on
    === roundtrip /proc/kbench/stamp     "rep i: <cycles>" lines, or "error: X"
    === file /proc/cpuinfo               (kbench-read machine) a file's text
    === cpuid 0x0 EAX EBX ECX EDX        (kbench-read machine) a cpuid leaf
    === end

Rows: path "kinsn" for each operation (op as in the report, e.g.
"rdmsr:0x611"; target the MSR address for rdmsr), "proc-read" and
"sys-read" for the two stamp files (op "read"), each measured quantity in
"cycles" (TSC cycles) and in ns as "latency"; what was not measured gets
one "latency" row with the reason. From a guest log, the rows of the
sampler's reports in the guest follow, with the guest's machine. An
energy-status MSR's verdict (its "liveness" and "liveness_probe" lines)
becomes the rows' `liveness` and `liveness_note`: kbench/README.md says
what the module reports and how it is worded.
"""

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path

from results import machine as machine_mod
from results import registry, rows, sampler

HARNESS = "kbench"
PATHS = registry.paths_of(HARNESS)
ROUNDTRIP_PATHS = {"/proc/kbench/stamp": "proc-read", "/sys/kernel/kbench/stamp": "sys-read"}

_SECTION = re.compile(r"^=== (\S+)(?: (.*))?$")


def sections(text: str) -> list[tuple[str, str, list[str]]]:
    """(kind, name, body lines) for each "=== kind name" section, in order.
    Lines before the first section (a boot log, say) are ignored."""
    out = []
    for line in text.splitlines():
        line = line.rstrip("\r")
        m = _SECTION.match(line)
        if m:
            out.append((m.group(1), m.group(2) or "", []))
        elif out:
            out[-1][2].append(line)
    return out


def parse_op(lines: list[str]) -> dict:
    """One operation report -> {"header": {key: value}, "batches": [cycles...], "error": str|None}."""
    header, batches, error = {}, [], None
    for line in lines:
        if line.startswith("#") or not line.strip():
            continue
        if line.startswith("error: "):
            error = line[len("error: "):]
            continue
        key, sep, value = line.partition(": ")
        if not sep:
            raise ValueError(f"kbench report: unexpected line {line!r}")
        if key.startswith("batch "):
            batches.append(float(value))
        else:
            header[key] = value
    return {"header": header, "batches": batches, "error": error}


VERDICTS = ("live", "frozen", "no-unit")
_PROBE_READS = re.compile(r"^(\d+) reads in (\d+) ms, value (0x[0-9a-fA-F]+)")
_PROBE_UNIT = re.compile(r"^unit MSR (0x[0-9a-fA-F]+) (?:reads (0x[0-9a-fA-F]+)|(faults))$")


def liveness_of(header: dict, msr, cpu) -> tuple[str | None, str | None]:
    """(liveness, liveness_note) of one operation report's header: (None,
    None) without a "liveness" line (not an energy counter, or a module that
    predates the probe). The note (None when live) is in the shape every
    harness uses, e.g. "MSR 0x611 on CPU 0: did not change in 101 ms (101
    reads, value 0x0): a dead counter, it yields no energy"."""
    verdict = header.get("liveness")
    if verdict is None:
        return None, None
    if verdict not in VERDICTS:
        raise ValueError(f"kbench report of {msr}: unknown liveness verdict {verdict!r}")
    if verdict == "live":
        return verdict, None
    name = f"MSR {msr} on CPU {cpu}"
    probe = header.get("liveness_probe", "")
    reads, unit = _PROBE_READS.match(probe), _PROBE_UNIT.match(probe)
    if verdict == "frozen" and reads:
        n, ms, value = reads.groups()
        return verdict, (f"{name}: did not change in {ms} ms ({n} reads, value {value}): "
                         "a dead counter, it yields no energy")
    if verdict == "no-unit" and unit:
        unit_msr, value, faults = unit.groups()
        if faults:
            why = f"energy unit MSR {unit_msr} cannot be read (rdmsr faults): no energy unit"
        elif int(value, 16) == 0:
            why = f"energy unit MSR {unit_msr} reads {value}: not RAPL, no energy unit"
        else:
            why = (f"energy unit MSR {unit_msr} reads {value}: its energy status unit "
                   "(bits 12:8) is 0, 1 J per count: not RAPL")
        return verdict, f"{name}: {why}"
    # a probe line this parser does not know: keep the module's own words
    return verdict, f"{name}: {verdict}: {probe or 'the module gave no probe details'}"


def _two_rows(common, path, op, target, cpu, target_cpu, cycles, tsc_khz, iterations,
              liveness=(None, None)):
    """The cycles row and the ns row of one measured quantity; `liveness`:
    the (verdict, note) of the energy counter it reads."""
    ns = [c * 1e6 / tsc_khz for c in cycles]
    verdict, note = liveness
    return [rows.measured_row(common, harness=HARNESS, path=path, op=op, target=target,
                              cpu=cpu, target_cpu=target_cpu, metric=metric, unit=unit,
                              samples=values, iterations=iterations,
                              liveness=verdict, liveness_note=note)
            for metric, unit, values in (("latency", "ns", ns), ("cycles", "cycles", cycles))]


def _not_ok_rows(common, path, op, target, cpu, target_cpu, reason, status):
    """One latency row says why nothing was measured (no cycles twin)."""
    return [rows.not_ok_row(common, harness=HARNESS, path=path, op=op, target=target,
                            cpu=cpu, target_cpu=target_cpu, metric="latency",
                            reason=reason, status=status)]


def report_rows(text: str, common: dict) -> list[dict]:
    """Rows from a `kbench-read report` output. Raises ValueError on a
    malformed report (a truncated one has no "=== end")."""
    secs = sections(text)
    if not secs or secs[-1][0] != "end":
        raise ValueError("kbench report is truncated (it does not finish with '=== end')")
    out, tsc_khz, pinned = [], None, None
    for kind, name, body in secs:
        if kind == "error":
            out += [r for p in PATHS for r in _not_ok_rows(
                common, p, "*", None, None, None, f"{name}: {' '.join(body)}", "error")]
        elif kind == "op":
            rep = parse_op(body)
            h = rep["header"]
            op = h.get("op") or Path(name).name
            target = op.split(":", 1)[1] if op.startswith("rdmsr:") else None
            cpu = machine_mod.int_or_none(h.get("cpu"))
            tsc_khz = machine_mod.int_or_none(h.get("tsc_khz")) or tsc_khz
            if rep["error"]:
                out += _not_ok_rows(common, "kinsn", op, target, cpu, cpu,
                                    f"reading {name} failed: {rep['error']}", "error")
            elif h.get("status") == "unsupported":
                out += _not_ok_rows(common, "kinsn", op, target, cpu, cpu,
                                    f"rdmsr {target} faults on this CPU (rdmsr_safe failed): "
                                    "the model does not implement this MSR", "unavailable")
            elif h.get("status") == "cut":
                out += _not_ok_rows(common, "kinsn", op, target, cpu, cpu,
                                    f"every batch ({h.get('batches_cut', '?')} of "
                                    f"{h.get('batches', '?')}) ran past the module's 1 ms "
                                    "interrupts-off deadline and was cut: the CPU was too "
                                    "busy (a contended host?); run again on an idle machine",
                                    "error")
            elif h.get("status") == "ok" and rep["batches"] and tsc_khz:
                out += _two_rows(common, "kinsn", op, target, cpu, cpu, rep["batches"],
                                 tsc_khz, machine_mod.int_or_none(h.get("iterations")),
                                 liveness_of(h, target, cpu))
            else:
                raise ValueError(f"kbench report of {name}: no status, batches or tsc_khz")
        elif kind == "pinned":
            pinned = machine_mod.int_or_none(name)
        elif kind == "roundtrip":
            path = ROUNDTRIP_PATHS.get(name)
            if path is None:
                raise ValueError(f"kbench report: unknown round-trip file {name}")
            errors = [line[len("error: "):] for line in body if line.startswith("error: ")]
            reps = [float(line.split(": ", 1)[1]) for line in body if line.startswith("rep ")]
            reads = next((machine_mod.int_or_none(line.split(": ", 1)[1]) for line in body
                          if line.startswith("reads: ")), None)
            if errors or not reps:
                out += _not_ok_rows(common, path, "read", name, pinned, None,
                                    f"reading {name} failed: {errors[0] if errors else 'no samples'}",
                                    "error")
            elif not tsc_khz:
                raise ValueError("kbench report: round trips but no tsc_khz to convert them")
            else:
                out += _two_rows(common, path, "read", name, pinned, None, reps, tsc_khz, reads)
    return out


def unavailable_rows(common: dict, reason: str) -> list[dict]:
    """The rows of a machine where the module cannot be loaded."""
    return [r for p in PATHS for r in _not_ok_rows(common, p, "*", None, None, None,
                                                   reason, "unavailable")]


def dump_path(tmp: str, name: str) -> Path:
    """Where the dumped file `name` (an absolute path on the machine) goes
    in the temporary tree. ValueError for a name that would leave it
    (`../x`, `/proc/../../x`): a guest log is input, not trusted."""
    parts = Path(name.lstrip("/")).parts
    if not parts or ".." in parts:
        raise ValueError(f"machine dump: file {name!r} is not a path under / "
                         "(empty, or with a '..' component)")
    return Path(tmp, *parts)


def machine_from_dump(text: str, tsc_khz_hint=None, hypervisor=None) -> dict:
    """The `machine` object of a machine described by `kbench-read machine`
    (a QEMU guest, say): its files are laid out in a temporary tree that
    machine.collect() reads like a live system. `hypervisor` overrides the
    detection when the caller knows (it started the VM). ValueError for a
    file name that would leave the tree (dump_path)."""
    with tempfile.TemporaryDirectory() as tmp:
        leaves = {}
        for kind, name, body in sections(text):
            if kind == "file":
                dest = dump_path(tmp, name)
                dest.parent.mkdir(parents=True, exist_ok=True)
                dest.write_text("\n".join(body) + "\n", encoding="utf-8")
            elif kind == "cpuid":
                leaf, *regs = (int(w, 16) for w in name.split())
                leaves[leaf] = tuple(regs)
        if leaves:
            machine_mod.write_cpuid_records(Path(tmp, "dev/cpu/0/cpuid"), leaves)
        described = machine_mod.collect(root=tmp, tsc_khz_hint=tsc_khz_hint)
    if hypervisor:
        described["hypervisor"] = hypervisor
    return described


def report_tsc_khz(text: str) -> int | None:
    """The kernel's tsc_khz as the module reported it."""
    m = re.search(r"^tsc_khz: (\d+)$", text, re.M)
    return int(m.group(1)) if m else None


_PART = re.compile(r"^=== begin (\S+)$", re.M)


def guest_parts(log: str) -> dict[str, str]:
    """Splits a guest log (kbench/qemu/guest-test.sh) at its "=== begin
    <part>" lines: {"machine": ..., "checks": ..., "report": ..., ...}."""
    marks = list(_PART.finditer(log))
    return {m.group(1): log[m.end():marks[i + 1].start() if i + 1 < len(marks) else len(log)]
            for i, m in enumerate(marks)}


def guest_sampler_rows(parts: dict[str, str], common: dict) -> list[dict]:
    """The rows of the reports raplbench-sample --report wrote in the guest
    (the parts "sampler-rows-<hz>", each a line of JSON), with `common`'s
    machine, run id and time. Lines that are not a JSON object (a kernel
    message on the console) are skipped; ValueError for a line that starts
    like a report but is not one."""
    out = []
    for name, body in parts.items():
        if not name.startswith("sampler-rows-"):
            continue
        for n, line in enumerate(body.splitlines(), 1):
            if not line.startswith("{"):
                continue
            try:
                out += sampler.report_rows(common, json.loads(line))
            except (json.JSONDecodeError, KeyError, TypeError) as e:
                raise ValueError(f"guest log part {name}, line {n}: not a JSON report: "
                                 f"{e!r}") from e
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m results.kbench",
                                     description="kbench-read output -> schema rows (JSON Lines)")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--report", help="output of `kbench-read report` (on this machine)")
    source.add_argument("--guest-log", help="serial log of kbench/qemu/guest-test.sh: its "
                        "report and the guest's own machine description")
    parser.add_argument("--hypervisor", help="override the detected hypervisor (e.g. qemu-tcg)")
    parser.add_argument("--run-id", default=None)
    parser.add_argument("--out", required=True, help="results.jsonl to write")
    args = parser.parse_args(argv)
    origin = args.report or args.guest_log
    text = Path(origin).read_text(encoding="utf-8", errors="replace")
    if args.guest_log:
        parts = guest_parts(text)
        missing = {"machine", "report"} - parts.keys()
        if missing:
            print(f"{origin}: no {' or '.join(sorted(missing))} part: did the guest script run?",
                  file=sys.stderr)
            return 2
        text = parts["report"]
    tsc = report_tsc_khz(text)
    if args.guest_log:
        try:
            the_machine = machine_from_dump(parts["machine"], tsc, args.hypervisor)
        except ValueError as e:
            print(f"{origin}: {e}", file=sys.stderr)
            return 2
    else:
        the_machine = machine_mod.collect(tsc_khz_hint=tsc)
        if args.hypervisor:
            the_machine["hypervisor"] = args.hypervisor
    common = rows.common(args.run_id or rows.new_run_id(), rows.utc_timestamp(), the_machine)
    try:
        out = report_rows(text, common)
        if args.guest_log:
            out += guest_sampler_rows(parts, common)
    except ValueError as e:
        print(f"{origin}: {e}", file=sys.stderr)
        return 2
    rows.write_jsonl(out, args.out)
    print(f"{args.out}: {len(out)} rows", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
