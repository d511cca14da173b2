"""ci/export: a run as Bencher Metric Format and github-action-benchmark JSON."""

import json
import subprocess
from pathlib import Path

from ci import export
from ci.conftest import common, latency, lognormal, reference, unavailable, write_run

# not serial: the ci/export wrapper only reads the checkout's .venv (conftest.py)

REPO = Path(__file__).resolve().parent.parent


def a_run(tmp_path) -> Path:
    c = common()
    perf = latency(c, lognormal(1, 700.0, 0.05), stand_in="no 'power' PMU: measured msr/tsc/")
    kbench_ns = latency(c, lognormal(2, 55.0, 0.02), harness="kbench", path="kinsn",
                        op="rdmsr:0x611", target="0x611")
    kbench_cycles = latency(c, lognormal(3, 160.0, 0.02), harness="kbench", path="kinsn",
                            op="rdmsr:0x611", target="0x611", metric="cycles")
    frozen = latency(c, lognormal(4, 2500.0, 0.05), path="perf", op="read",
                     target="power/energy-psys/")
    frozen.update(liveness="frozen", liveness_note="power/energy-psys/: did not change")
    rate = latency(c, [999.0] * 10, path="ebpf-mmap", op="tick", target="bpf_timer",
                   cpu=None, metric="rate_hz")
    rows = [perf, kbench_ns, kbench_cycles, frozen, rate, unavailable(c), reference(c)]
    return write_run(tmp_path / "run", rows)


def test_bmf_has_each_measured_row_as_a_measure_of_its_benchmark(tmp_path):
    run = a_run(tmp_path)
    assert export.main([str(run), "--bmf", str(tmp_path / "bmf.json")]) == 0
    doc = json.loads((tmp_path / "bmf.json").read_text())
    kinsn = doc["kinsn/rdmsr:0x611/0x611/0>0/kbench"]
    assert set(kinsn) == {"latency", "cycles"}  # one benchmark, two measures
    assert kinsn["latency"]["lower_value"] <= kinsn["latency"]["value"] \
        <= kinsn["latency"]["upper_value"]
    # a figure that is not the real thing says so in its name
    assert "perf/read/msr/tsc//0>0/gbench [stand-in]" in doc
    assert "perf/read/power/energy-psys//0>0/gbench [frozen counter]" in doc
    # unavailable and published rows are not measured figures
    assert not any(k.startswith("msr-dev/") for k in doc)
    assert len(doc) == 4


def test_github_action_keeps_smaller_is_better_metrics_only(tmp_path, capsys):
    run = a_run(tmp_path)
    assert export.main([str(run), "--github-action", str(tmp_path / "gha.json")]) == 0
    entries = json.loads((tmp_path / "gha.json").read_text())
    names = [e["name"] for e in entries]
    assert "kinsn/rdmsr:0x611/0x611/0>0/kbench (cycles)" in names
    assert not any("rate_hz" in n for n in names)
    assert "1 rows where larger is better" in capsys.readouterr().err
    for e in entries:
        assert set(e) == {"name", "unit", "value", "range", "extra"}
        assert isinstance(e["value"], float) and "95% CI" in e["range"]


def test_bad_input_exits_2_and_writes_nothing(tmp_path, capsys):
    assert export.main([str(tmp_path / "missing"), "--bmf", str(tmp_path / "b.json")]) == 2
    assert "no such run directory" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"schema_version": "2"}\n')
    assert export.main([str(bad), "--bmf", str(tmp_path / "b.json")]) == 2
    only_unavailable = write_run(tmp_path / "empty", [unavailable(common())])
    assert export.main([str(only_unavailable), "--bmf", str(tmp_path / "b.json")]) == 2
    assert "no measured row" in capsys.readouterr().err
    assert not (tmp_path / "b.json").exists()


def test_the_wrapper_runs_from_any_directory(tmp_path):
    run = a_run(tmp_path)
    done = subprocess.run([str(REPO / "ci" / "export"), "run", "--bmf", "out/bmf.json"],
                          cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "out" / "bmf.json").read_text())
    usage = subprocess.run([str(REPO / "ci" / "export"), "run"], cwd=tmp_path,
                           capture_output=True, text=True)
    assert usage.returncode == 2 and "nothing to write" in usage.stderr
