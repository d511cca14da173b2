"""Names of machines, CPU placement and targets."""

from plots import labels


def machine(**kw):
    base = {k: None for k in ("hostname", "cpu_vendor", "cpu_model_name", "kernel", "hypervisor")}
    return {**base, **kw}


def test_machine_names_are_vendor_and_model():
    intel = machine(cpu_vendor="GenuineIntel",
                    cpu_model_name="11th Gen Intel(R) Core(TM) i7-1185G7 @ 3.00GHz")
    assert labels.machine_name(intel) == "11th Gen Intel Core i7-1185G7"
    amd = machine(cpu_vendor="AuthenticAMD", cpu_model_name="AMD Ryzen 9 7950X 16-Core Processor")
    assert labels.machine_name(amd) == "AMD Ryzen 9 7950X 16-Core"
    assert labels.machine_name(machine(cpu_vendor="GenuineIntel", cpu_model_name="Intel 8809G")) \
        == "Intel 8809G"
    assert labels.machine_name(machine(cpu_vendor="AuthenticAMD")) == "AMD"
    assert labels.machine_name(machine()) == "unknown CPU"


def test_unique_labels_tag_platform_and_disambiguate():
    vm = machine(cpu_vendor="GenuineIntel", cpu_model_name="Intel(R) Xeon(R) Processor",
                 hypervisor="kvm", hostname="a")
    tcg = dict(vm, hypervisor="qemu-tcg")
    assert labels.unique_labels([vm, tcg], ["r1", "r2"]) == ["Intel Xeon [VM]",
                                                             "Intel Xeon [emulated]"]
    assert labels.unique_labels([vm, dict(vm, hostname="b")], ["r1", "r2"]) == \
        ["Intel Xeon [VM] (a)", "Intel Xeon [VM] (b)"]
    assert labels.unique_labels([vm, vm], ["r1", "r2"]) == \
        ["Intel Xeon [VM] (a) (run r1)", "Intel Xeon [VM] (a) (run r2)"]


def test_platform():
    assert labels.platform(machine(hostname="h", kernel="6.1")) == "bare metal"
    assert labels.platform(machine(hypervisor="kvm")) == "virtual machine (kvm)"
    assert labels.platform(machine(hypervisor="qemu-tcg")).startswith("emulated CPU (qemu-tcg)")
    assert labels.platform(machine()) == "platform unknown"


def test_placement():
    assert labels.placement({"cpu": 0, "target_cpu": 0}) == labels.SAME_CPU
    assert labels.placement({"cpu": 1, "target_cpu": 0}) == labels.OTHER_CPU
    assert labels.placement({"cpu": 0, "target_cpu": None}) == labels.NO_TARGET
    # with the target's state where it was set (issue 34)
    busy = {"cpu": 1, "target_cpu": 0, "target_state": "busy"}
    assert labels.where_read(busy) == "other CPU, target busy"
    assert labels.where_read({"cpu": 1, "target_cpu": 0}) == labels.OTHER_CPU
    assert labels.WHERE_READ.index("other CPU, target idle") < labels.WHERE_READ.index(
        "other CPU, target busy")
    note = labels.target_states_note([busy, {**busy, "target_state": "idle"}])
    assert note.startswith("target CPU states of the cross-CPU reads: idle, no load of the "
                           "suite's on the target CPU"), note
    assert "; busy, a thread pinned" in note
    assert labels.target_states_note([{"cpu": 0, "target_cpu": 0}]) == ""


def test_short_targets():
    assert labels.short_target("/sys/class/powercap/intel-rapl:0/energy_uj") == "intel-rapl:0"
    assert labels.short_target("0x611") == "0x611 PKG energy"
    assert labels.short_target("0xC001029B") == "0xc001029b PKG energy"
    assert labels.short_target("power/energy-pkg/") == "energy-pkg"
    assert labels.short_target("msr/tsc/") == "msr/tsc"
    assert labels.short_target("/sys/class/net/lo/statistics/rx_bytes") == "rx_bytes"
    assert labels.short_target(None) == ""
    assert labels.cell_target("bpf_timer (CPU-pinned, absolute deadlines), 1000 Hz requested") \
        == "bpf_timer (CPU-pinned, absolute…"


def test_cpu_count_says_vcpus_in_a_guest_cpus_and_packages_on_bare_metal():
    assert labels.cpu_count({"online_cpus": 2, "packages": 1, "hypervisor": "kvm"}) == "2 vCPUs"
    assert labels.cpu_count({"online_cpus": 1, "packages": 1, "hypervisor": "kvm"}) == "1 vCPU"
    assert (labels.cpu_count({"online_cpus": 64, "packages": 2, "hypervisor": None})
            == "64 CPUs, 2 packages")
    assert (labels.cpu_count({"online_cpus": 2, "packages": None, "hypervisor": None})
            == "2 CPUs, packages not readable")
    assert labels.cpu_count({"hypervisor": None}) == "CPU count not recorded (run predates it)"
    assert labels.cpu_count({"online_cpus": None}) == "CPU count not readable"


def test_other_cpu_pairs_are_read_from_the_rows():
    rows = [{"metric": "latency", "cpu": c, "target_cpu": t} for c, t in
            ((0, 0), (15, 0), (15, 0), (3, 2), (0, None))]
    rows.append({"metric": "stolen_ns_per_read", "cpu": 1, "target_cpu": 0})
    assert labels.other_cpu_pairs(rows) == ["3→2", "15→0"]
