import struct

import pytest

from results import machine, schema
from results.conftest import parse_leaves, write_cpuid

INTEL_VENDOR = (0x1B, *struct.unpack("<3I", b"GenuntelineI"))  # ebx, edx, ecx order


def signature(text: bytes, max_leaf=0x40000001):
    return (max_leaf, *struct.unpack("<3I", text))


@pytest.fixture(autouse=True)
def no_dmesg(monkeypatch):
    """Fixture trees must never consult the live kernel log."""
    def fail():
        raise AssertionError("dmesg read for a fixture tree")
    monkeypatch.setattr(machine, "_dmesg", fail)


def as_guest(root, leaves):
    """Turn a fixture tree into a virtual machine: hypervisor flag + cpuid."""
    cpuinfo = root / "proc/cpuinfo"
    cpuinfo.write_text(cpuinfo.read_text().replace("flags\t\t: fpu ", "flags\t\t: hypervisor fpu "))
    write_cpuid(root / "dev/cpu/0/cpuid", leaves)


def test_intel_bare_metal(machine_root):
    m = machine.collect(machine_root("machine-intel"))
    assert {k: v for k, v in m.items() if k != "mitigations"} == {
        "hostname": "icx-node",
        "cpu_vendor": "GenuineIntel",
        "cpu_family": 6,
        "cpu_model": 106,
        "cpu_stepping": 6,
        "cpu_model_name": "Intel(R) Xeon(R) Gold 6330 CPU @ 2.00GHz",
        "microcode": "0xd0003a5",
        "kernel": "6.1.0-27-amd64",
        "hypervisor": None,
        "smt": True,
        "governor": "performance",
        "boost": True,  # intel_pstate/no_turbo = 0
        "tsc_khz": 2000000,  # cpuid 0x15: 25 MHz crystal * 160 / 2
        "online_cpus": 4,  # online: 0-3
        "packages": 2,  # physical_package_id 0, 0, 1, 1
    }
    assert len(m["mitigations"]) == 13
    assert m["mitigations"]["mmio_stale_data"] == "Mitigation: Clear CPU buffers; SMT vulnerable"
    assert schema.validate_machine(m) == []


def test_amd_bare_metal(machine_root):
    m = machine.collect(machine_root("machine-amd"))
    assert {k: v for k, v in m.items() if k != "mitigations"} == {
        "hostname": "rome-node",
        "cpu_vendor": "AuthenticAMD",
        "cpu_family": 23,
        "cpu_model": 49,
        "cpu_stepping": 0,
        "cpu_model_name": "AMD EPYC 7702 64-Core Processor",
        "microcode": "0x830107a",
        "kernel": "6.1.0-27-amd64",
        "hypervisor": None,
        "smt": True,
        "governor": "schedutil",
        "boost": True,  # cpufreq/boost = 1
        "tsc_khz": None,  # no leaf 0x15 on AMD, no hypervisor, no hint
        "online_cpus": 2,  # online: 0-1
        "packages": None,  # no topology directory in this tree
    }
    assert m["mitigations"]["spec_rstack_overflow"] == "Mitigation: Safe RET"
    assert schema.validate_machine(m) == []


def test_field_order_is_the_schema_order(machine_root):
    m = machine.collect(machine_root("machine-amd"))
    optional = ["online_cpus", "packages"]  # absent from runs made before them
    assert list(m) == schema.SCHEMA["$defs"]["machine"]["required"] + optional


@pytest.mark.parametrize("text, cpus", [
    ("0", [0]), ("0-3", [0, 1, 2, 3]), ("0-1,4,6-7\n", [0, 1, 4, 6, 7]),
    ("", []), (None, []), ("0-", []), ("x", []),
])
def test_cpu_list(text, cpus):
    assert machine.cpu_list(text) == cpus


def test_a_run_made_before_the_cpu_count_still_validates(machine_root):
    m = machine.collect(machine_root("machine-amd"))
    del m["online_cpus"], m["packages"]
    assert schema.validate_machine(m) == []


def test_tsc_hint_is_the_last_resort(machine_root):
    assert machine.collect(machine_root("machine-amd"), tsc_khz_hint=1996250)["tsc_khz"] == 1996250
    assert machine.collect(machine_root("machine-intel"), tsc_khz_hint=1)["tsc_khz"] == 2000000


def test_cpuid_reads_records_at_offset_leaf(machine_root):
    root = machine_root("machine-amd")
    eax, ebx, ecx, edx = machine.cpuid(root, 0)
    assert eax == 0x10
    assert struct.pack("<3I", ebx, edx, ecx) == b"AuthenticAMD"
    assert machine.cpuid(root, 0x40000000) is None  # past the end of the file
    assert machine.cpuid(root / "nowhere", 0) is None


def test_write_cpuid_refuses_overlapping_records(tmp_path):
    with pytest.raises(ValueError, match="overlap"):
        write_cpuid(tmp_path / "cpuid", {0: (0, 0, 0, 0), 1: (0, 0, 0, 0)})
    assert parse_leaves("# c\n0x15 1 2 3 4  # x\n") == {0x15: (1, 2, 3, 4)}


@pytest.mark.parametrize("text, name", [
    (b"KVMKVMKVM\0\0\0", "kvm"),
    (b"TCGTCGTCGTCG", "qemu-tcg"),
    (b"Microsoft Hv", "hyperv"),
    (b"VMwareVMware", "vmware"),
    (b"XenVMMXenVMM", "xen"),
    (b"VBoxVBoxVBox", "virtualbox"),
    (b"bhyve bhyve ", "bhyve"),
    (b"ACRNACRNACRN", "acrn"),
    (b"SomethingNew", "unknown"),
])
def test_hypervisor_from_cpuid_signature(machine_root, text, name):
    root = machine_root("machine-intel")
    as_guest(root, {0: INTEL_VENDOR, 0x40000000: signature(text)})
    assert machine.collect(root)["hypervisor"] == name


def test_hypervisor_fallbacks(machine_root):
    root = machine_root("machine-intel")
    as_guest(root, {})  # flag set, cpuid device unreadable (empty file)
    assert machine.collect(root)["hypervisor"] == "unknown"
    (root / "sys/class/dmi/id/sys_vendor").write_text("QEMU\n")
    assert machine.collect(root)["hypervisor"] == "qemu"
    (root / "sys/hypervisor").mkdir()
    (root / "sys/hypervisor/type").write_text("xen\n")
    assert machine.collect(root)["hypervisor"] == "xen"


def test_hypervisor_tsc_leaf(machine_root):
    root = machine_root("machine-amd")
    as_guest(root, {0: (0x10, 0, 0, 0),
                    0x40000000: signature(b"KVMKVMKVM\0\0\0", max_leaf=0x40000010),
                    0x40000010: (2599998, 1000000, 0, 0)})
    m = machine.collect(root, tsc_khz_hint=123)
    assert (m["hypervisor"], m["tsc_khz"]) == ("kvm", 2599998)


def test_hypervisor_tsc_leaf_needs_max_leaf_and_flag(machine_root):
    root = machine_root("machine-amd")
    leaves = {0: (0x10, 0, 0, 0),
              0x40000000: signature(b"KVMKVMKVM\0\0\0", max_leaf=0x40000001),
              0x40000010: (2599998, 0, 0, 0)}
    as_guest(root, leaves)
    assert machine.collect(root, tsc_khz_hint=123)["tsc_khz"] == 123
    # Bare metal (no hypervisor flag): leaves 0x4000xxxx are garbage, ignored.
    bare = machine_root("machine-intel")
    leaves[0x40000000] = signature(b"KVMKVMKVM\0\0\0", max_leaf=0x40000010)
    leaves[0] = INTEL_VENDOR
    write_cpuid(bare / "dev/cpu/0/cpuid", leaves)
    assert machine.collect(bare, tsc_khz_hint=123)["tsc_khz"] == 123


def test_microcode_from_sysfs_when_cpuinfo_lacks_it(machine_root):
    root = machine_root("machine-amd")
    cpuinfo = root / "proc/cpuinfo"
    cpuinfo.write_text(cpuinfo.read_text().replace("microcode\t: 0x830107a\n", ""))
    (root / "sys/devices/system/cpu/cpu0/microcode/version").write_text("0x8301055\n")
    assert machine.collect(root)["microcode"] == "0x8301055"


def test_missing_sysfs_gives_nulls(tmp_path):
    m = machine.collect(tmp_path)
    assert set(m.values()) == {None}
    assert schema.validate_machine(m) == []


def test_boost_sources(machine_root):
    root = machine_root("machine-intel")
    (root / "sys/devices/system/cpu/intel_pstate/no_turbo").write_text("1\n")
    assert machine.collect(root)["boost"] is False
    root = machine_root("machine-amd")
    (root / "sys/devices/system/cpu/cpufreq/boost").write_text("0\n")
    assert machine.collect(root)["boost"] is False


def test_tsc_from_kernel_log():
    log = ("[    0.000054] tsc: Detected 2599.998 MHz processor\n"
           "[    1.234567] tsc: Refined TSC clocksource calibration: 2600.012 MHz\n")
    assert machine.tsc_khz_from_kernel_log(log) == 2600012
    assert machine.tsc_khz_from_kernel_log(log.splitlines()[0]) == 2599998
    assert machine.tsc_khz_from_kernel_log("nothing here") is None


def test_live_machine_matches_the_schema(monkeypatch):
    monkeypatch.undo()  # the live machine may read its kernel log
    m = machine.collect()
    assert schema.validate_machine(m) == []
    assert m["kernel"] and m["hostname"]


def test_hypervisor_table_is_well_formed():
    # results/hypervisors.json: cpuid's signatures are 12 ASCII bytes
    assert machine.HYPERVISOR_SIGNATURES and machine.DMI_VENDOR_HINTS
    assert all(len(sig) == 12 for sig in machine.HYPERVISOR_SIGNATURES)
    assert machine.HYPERVISOR_SIGNATURES[b"KVMKVMKVM\0\0\0"] == "kvm"
    assert list(machine.DMI_VENDOR_HINTS)[0] == "QEMU"
