"""The stored fixture runs: valid, reproducible, and covering what the
report must handle."""

from plots.fixtures import AMD, INTEL, KVM_FROZEN, SCHEMA1_INTEL, make_fixtures
from plots.runs import read_rows
from results.schema import iter_file_errors


def test_fixtures_validate():
    for run in (INTEL, AMD, KVM_FROZEN):
        assert list(iter_file_errors(run / "results.jsonl")) == []


def test_fixtures_are_the_generators_output(tmp_path):
    for path in make_fixtures.write(tmp_path):
        stored = make_fixtures.HERE / path.parent.name / path.name
        assert path.read_bytes() == stored.read_bytes(), (
            "fixtures changed: rerun .venv/bin/python -m plots.fixtures.make_fixtures")


def test_fixtures_cover_the_cases():
    intel, amd = read_rows(INTEL / "results.jsonl"), read_rows(AMD / "results.jsonl")
    assert intel[0]["machine"]["cpu_vendor"] == "GenuineIntel"
    assert amd[0]["machine"]["cpu_vendor"] == "AuthenticAMD"
    for rows in (intel, amd):
        kinds = {(r["harness"], r["metric"]) for r in rows}
        assert {("kbench", "latency"), ("kbench", "cycles"), ("gbench", "latency"),
                ("criterion", "latency"), ("sampler", "rate_hz"), ("sampler", "jitter_us"),
                ("sampler", "missed_ticks"), ("sampler", "cpu_us_per_sample")} <= kinds
        assert any(r["status"] == "unavailable" for r in rows)
        assert {r["op"] for r in rows if r["path"] == "sampler"} >= {"powercap", "perf", "ebpf",
                                                                       "timer"}
    assert any(r["stand_in"] for r in amd)
    assert any(r["harness"] == "hyperfine" and r["metric"] == "overhead_pct" for r in amd)
    assert any(r["path"] == "sampler" and r["status"] == "unavailable" for r in amd)


def test_fixtures_carry_liveness_verdicts_and_one_run_predates_them():
    intel, frozen = read_rows(INTEL / "results.jsonl"), read_rows(KVM_FROZEN / "results.jsonl")
    assert {r["liveness"] for r in intel} == {"live", None}
    dead = [r for r in frozen if r["liveness"] == "frozen"]
    assert {r["path"] for r in dead} == {"perf", "ebpf-lookup", "ebpf-mmap", "sampler"}
    assert all(r["liveness_note"] and r["stand_in"] is None for r in dead)
    old = read_rows(SCHEMA1_INTEL / "results.jsonl")
    assert all(r["schema_version"] == "1" and "liveness" not in r for r in old)
    assert list(iter_file_errors(SCHEMA1_INTEL / "results.jsonl")) == []


def test_fixtures_carry_cpu_counts_and_one_run_predates_them():
    """online_cpus and packages as results.machine reads them from the trees
    (intel 4/2, amd 2/unknown) and the guests of issue 17 (16 and 2 vCPUs,
    their "other CPU" rows 15→0 and 1→0); schema1-intel predates both."""
    from plots.fixtures import KVM_VICTIM
    from results import machine as machine_mod

    def machine(run):
        return read_rows(run / "results.jsonl")[0]["machine"]

    for run, tree in ((INTEL, "machine-intel"), (AMD, "machine-amd")):
        live = machine_mod.collect(make_fixtures.TREES / tree)
        assert (machine(run)["online_cpus"], machine(run)["packages"]) == (
            live["online_cpus"], live["packages"])
    assert (machine(INTEL)["online_cpus"], machine(INTEL)["packages"]) == (4, 2)
    for run, vcpus, other in ((KVM_FROZEN, 16, 15), (KVM_VICTIM, 2, 1)):
        assert machine(run)["hypervisor"] == "kvm" and machine(run)["online_cpus"] == vcpus
        others = {r["cpu"] for r in read_rows(run / "results.jsonl")
                  if r["metric"] == "latency" and r["status"] == "ok"
                  and r["target_cpu"] is not None and r["cpu"] != r["target_cpu"]}
        assert others == {other}
    assert "online_cpus" not in machine(SCHEMA1_INTEL)
    # issue 17's pair: perf and eBPF on the msr/tsc/ stand-in there, energy-psys (frozen) here
    perf = {(r["target"], bool(r["stand_in"]), r["liveness"])
            for run in (KVM_VICTIM, KVM_FROZEN) for r in read_rows(run / "results.jsonl")
            if r["path"] == "perf" and r["metric"] == "latency"}
    assert perf == {("msr/tsc/", True, None), ("power/energy-psys/", False, "frozen")}
