"""What machine a run was made on: the `machine` object of every row.

collect() reads /proc, /sys and /dev/cpu/0/cpuid. Every path is joined under
`root`, so tests point it at a fixture tree (results/fixtures/machine-*/)
instead of the live system. A field that cannot be found is None, never a
guess. `python -m results.machine` prints the JSON.

The cpuid device (x86 `cpuid` module, readable by root) answers a 16-byte
pread at offset LEAF with eax, ebx, ecx, edx, little-endian; a fixture is a
sparse file with those records at the same offsets.
"""

import argparse
import json
import os
import re
import socket
import struct
import subprocess
import sys
from pathlib import Path

# Hypervisor names: cpuid signature (leaf 0x40000000's ebx, ecx, edx) -> name,
# and /sys/class/dmi/id/sys_vendor prefixes only virtual machines report.
# results/hypervisors.json holds them.
_HYPERVISORS = json.loads(Path(__file__).with_name("hypervisors.json").read_text(encoding="utf-8"))
HYPERVISOR_SIGNATURES = {sig.encode("ascii"): name
                         for sig, name in _HYPERVISORS["cpuid_signatures"].items()}
DMI_VENDOR_HINTS = dict(_HYPERVISORS["dmi_sys_vendor_prefixes"])
EMULATED = HYPERVISOR_SIGNATURES[b"TCGTCGTCGTCG"]  # "qemu-tcg": QEMU emulating the CPU


def is_emulated(machine: dict) -> bool:
    """Timings from an emulated CPU (QEMU TCG) are not hardware figures."""
    return machine.get("hypervisor") == EMULATED

LEAF_MAX_BASIC = 0x0
LEAF_TSC_CRYSTAL = 0x15       # eax/ebx: TSC / crystal ratio, ecx: crystal Hz
LEAF_HYPERVISOR = 0x40000000  # eax: max hypervisor leaf, ebx/ecx/edx: signature
LEAF_HV_TIMING = 0x40000010   # eax: TSC kHz (VMware's convention, also QEMU/KVM's)


def _read(root, rel: str) -> str | None:
    try:
        return Path(root, rel).read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None


def int_or_none(text) -> int | None:
    """int(text), or None where text is no integer (or None)."""
    try:
        return int(text)
    except (TypeError, ValueError):
        return None


def _bool01(text) -> bool | None:
    return {"1": True, "0": False}.get(text)


def cpuinfo(root="/") -> dict:
    """The first processor block of /proc/cpuinfo as {key: value}."""
    text = _read(root, "proc/cpuinfo") or ""
    info = {}
    for line in text.split("\n\n")[0].splitlines():
        key, sep, value = line.partition(":")
        if sep:
            info[key.strip()] = value.strip()
    return info


def cpuid(root, leaf: int, cpu: int = 0) -> tuple[int, int, int, int] | None:
    """(eax, ebx, ecx, edx) of a cpuid leaf, or None when the device (or the
    fixture record) cannot be read."""
    try:
        with open(Path(root, f"dev/cpu/{cpu}/cpuid"), "rb", buffering=0) as device:
            record = os.pread(device.fileno(), 16, leaf)
    except OSError:
        return None
    return struct.unpack("<4I", record) if len(record) == 16 else None


def write_cpuid_records(path, leaves: dict[int, tuple[int, int, int, int]]) -> None:
    """Write a stand-in for /dev/cpu/N/cpuid that cpuid() reads like the
    device (the module docstring), for fixture trees and for machines
    described from afar (a QEMU guest's dump). Records closer than 16 bytes
    would overwrite each other, so they are refused (the real device has
    no such limit: the offset is only a key)."""
    ordered = sorted(leaves)
    for a, b in zip(ordered, ordered[1:]):
        if b - a < 16:
            raise ValueError(f"cpuid records of leaves {a:#x} and {b:#x} overlap")
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        for leaf in ordered:
            f.seek(leaf)
            f.write(struct.pack("<4I", *leaves[leaf]))


def _hypervisor(root, flag: bool) -> str | None:
    if flag:
        regs = cpuid(root, LEAF_HYPERVISOR)
        if regs:
            name = HYPERVISOR_SIGNATURES.get(struct.pack("<3I", *regs[1:]))
            if name:
                return name
    sys_type = _read(root, "sys/hypervisor/type")
    if sys_type:
        return sys_type
    vendor = _read(root, "sys/class/dmi/id/sys_vendor") or ""
    for prefix, name in DMI_VENDOR_HINTS.items():
        if vendor.startswith(prefix):
            return name
    return "unknown" if flag else None


def _boost(root) -> bool | None:
    for rel in ("sys/devices/system/cpu/cpufreq/boost",
                "sys/devices/system/cpu/cpufreq/policy0/boost"):  # amd-pstate, per policy
        value = _bool01(_read(root, rel))
        if value is not None:
            return value
    no_turbo = _bool01(_read(root, "sys/devices/system/cpu/intel_pstate/no_turbo"))
    return None if no_turbo is None else not no_turbo


def _mitigations(root) -> dict | None:
    directory = Path(root, "sys/devices/system/cpu/vulnerabilities")
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return None
    status = {name: _read(directory, name) for name in names}
    return {name: line for name, line in status.items() if line is not None}


def cpu_list(text: str | None) -> list[int]:
    """The CPUs of a kernel cpu list ("0-3,8,10-11"); [] when absent or malformed."""
    cpus = []
    for part in (text or "").split(","):
        lo, sep, hi = part.strip().partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            return []
        cpus += range(int(lo), int(hi if sep else lo) + 1)
    return cpus


def _packages(root, online: list[int]) -> int | None:
    """How many packages the online CPUs sit in, from topology; None when
    any online CPU has no readable physical_package_id."""
    ids = {int_or_none(_read(root, f"sys/devices/system/cpu/cpu{n}/topology/physical_package_id"))
           for n in online}
    return None if not ids or None in ids else len(ids)


_REFINED = re.compile(r"tsc: Refined TSC clocksource calibration: (\d+(?:\.\d+)?) MHz")
_DETECTED = re.compile(r"tsc: Detected (\d+(?:\.\d+)?) MHz")


def tsc_khz_from_kernel_log(text: str) -> int | None:
    """TSC kHz from kernel log lines: the refined calibration when the kernel
    made one, else the boot-time detection."""
    for pattern in (_REFINED, _DETECTED):
        found = pattern.findall(text)
        if found:
            return round(float(found[-1]) * 1000)
    return None


def _dmesg() -> str:
    try:
        done = subprocess.run(["dmesg"], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout if done.returncode == 0 else ""  # dmesg_restrict, for one


def _tsc_khz(root, hypervisor_flag: bool, hint) -> int | None:
    basic = cpuid(root, LEAF_MAX_BASIC)
    if basic and basic[0] >= LEAF_TSC_CRYSTAL:
        den, num, crystal_hz, _ = cpuid(root, LEAF_TSC_CRYSTAL) or (0, 0, 0, 0)
        if den and num and crystal_hz:
            return round(crystal_hz * num / den / 1000)
    # Hypervisor leaves hold garbage on bare metal: trust them only in a guest.
    if hypervisor_flag:
        hv = cpuid(root, LEAF_HYPERVISOR)
        if hv and hv[0] >= LEAF_HV_TIMING:
            timing = cpuid(root, LEAF_HV_TIMING)
            if timing and timing[0]:
                return timing[0]
    if Path(root).resolve() == Path("/"):
        khz = tsc_khz_from_kernel_log(_dmesg())
        if khz:
            return khz
    return int(hint) if hint else None


def collect(root="/", tsc_khz_hint=None) -> dict:
    """The `machine` object (schema field order). `tsc_khz_hint` (for example
    the TSC frequency ubench measured) is used when no better source exists."""
    live = Path(root).resolve() == Path("/")
    info = cpuinfo(root)
    flag = "hypervisor" in info.get("flags", "").split()
    cpu = "sys/devices/system/cpu"
    online = cpu_list(_read(root, f"{cpu}/online"))
    return {
        "hostname": _read(root, "proc/sys/kernel/hostname") or (socket.gethostname() if live else None),
        "cpu_vendor": info.get("vendor_id"),
        "cpu_family": int_or_none(info.get("cpu family")),
        "cpu_model": int_or_none(info.get("model")),
        "cpu_stepping": int_or_none(info.get("stepping")),
        "cpu_model_name": info.get("model name"),
        "microcode": info.get("microcode") or _read(root, f"{cpu}/cpu0/microcode/version"),
        "kernel": _read(root, "proc/sys/kernel/osrelease") or (os.uname().release if live else None),
        "hypervisor": _hypervisor(root, flag),
        "smt": _bool01(_read(root, f"{cpu}/smt/active")),
        "governor": _read(root, f"{cpu}/cpu0/cpufreq/scaling_governor"),
        "boost": _boost(root),
        "tsc_khz": _tsc_khz(root, flag, tsc_khz_hint),
        "mitigations": _mitigations(root),
        "online_cpus": len(online) if online else None,
        "packages": _packages(root, online),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m results.machine",
                                     description="Print the machine description as JSON.")
    parser.add_argument("--root", default="/", help="read this tree instead of / (fixtures)")
    parser.add_argument("--tsc-khz-hint", type=int, help="TSC kHz to use when nothing better is found")
    args = parser.parse_args(argv)
    json.dump(collect(args.root, args.tsc_khz_hint), sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
