"""The gate's outputs and command line: the summary and verdict files,
storing the baseline, the ci/gate wrapper, `make gate`, runs that did not
complete."""

import errno
import json
import os
import subprocess

from ci import gate
from ci.conftest import common, latency, lognormal, pair, run_main, write_run
from results.test_runfile import interrupted_run, killed_run

# not serial: make gate and make baseline read the checkout and write only
# in the test's temporary directory (conftest.py)

# ---- outputs, baseline storage, the wrapper -------------------------------------------

def test_summary_file_step_summary_and_verdict_path(tmp_path, capsys, builtin, monkeypatch):
    c = common()
    b, cur = pair(tmp_path, [latency(c, lognormal(1, 500, 0.05))],
                  [latency(c, lognormal(2, 700, 0.05))])
    step = tmp_path / "step-summary.md"
    step.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    summary, verdict = tmp_path / "summary.md", tmp_path / "out" / "v.json"
    verdict.parent.mkdir()
    code, out, _ = run_main(capsys, b, cur, "--config", str(builtin),
                            "--summary", str(summary), "--verdict", str(verdict))
    assert code == 1
    assert summary.read_text() == out
    assert step.read_text() == "earlier step\n" + out + "\n"
    doc = json.loads(verdict.read_text())
    assert doc["verdict"] == "fail" and doc["exit_code"] == 1
    assert doc["settings"]["defaults"] == {"alpha": 0.01, "threshold_pct": 10.0, "min_samples": 10,
                                           "threshold_abs": 0.0, "min_effect": 0.0}
    assert doc["baseline"]["file"].endswith("baseline/results.jsonl")
    assert not (cur / gate.VERDICT_NAME).exists()
    # --summary naming the step summary itself appends once, never overwrites
    code, out, _ = run_main(capsys, b, cur, "--config", str(builtin), "--summary", str(step))
    assert step.read_text().count("## raplbench gate") == 2


def test_store_baseline_validates_then_copies(tmp_path, capsys):
    c = common()
    run = write_run(tmp_path / "runs" / "r1", [latency(c, lognormal(1, 500, 0.05))])
    target = tmp_path / "baseline"
    assert gate.main(["--store-baseline", "--current", str(run), "--baseline", str(target)]) == 0
    stored = target / "results.jsonl"
    assert stored.read_bytes() == (run / "results.jsonl").read_bytes()
    assert "baseline: " in capsys.readouterr().out
    (run / "results.jsonl").write_text("{\n")
    assert gate.main(["--store-baseline", "--current", str(run), "--baseline", str(target)]) == 2
    assert "results.jsonl:1: (row): not valid JSON" in capsys.readouterr().err
    assert stored.read_bytes() != b"{\n"  # the old baseline is kept


def test_the_wrapper_runs_from_any_directory(tmp_path):
    c = common()
    run = write_run(tmp_path / "run", [latency(c, lognormal(1, 500, 0.05))])
    (tmp_path / "ci").mkdir()  # a `ci` package of the caller's must not shadow ours
    (tmp_path / "ci" / "__init__.py").write_text("raise ImportError('wrong ci')\n")
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    done = subprocess.run([str(gate.REPO / "ci" / "gate"), "--baseline", "run/results.jsonl",
                           "--current", "run"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "✅ pass" in done.stdout and (run / gate.VERDICT_NAME).exists()


def test_a_bug_of_the_gate_exits_2_never_1(tmp_path, capsys, monkeypatch, builtin):
    """1 means a verdict that fails; a crash of the gate is not one."""
    c = common()
    run = write_run(tmp_path / "run", [latency(c, lognormal(1, 500, 0.05))])

    def broken(*_):
        raise ValueError("Out of range float values are not JSON compliant")
    monkeypatch.setattr(gate, "run_gate", broken)
    code, _, err = run_main(capsys, run, run, "--config", str(builtin))
    assert code == 2
    assert "gate: internal error: ValueError: Out of range float" in err


def test_make_gate_exits_with_the_gates_own_status(tmp_path, builtin):
    """Issue 13, item 5: make turns a failed recipe's 1 into 2, so a CI step
    using `make gate` could not tell a regression from a usage error. The
    Makefile runs the gate as it reads itself: 0 pass, 1 regression, 2 bad
    input, with the gate's Markdown still on stdout."""
    c = common()
    base = write_run(tmp_path / "base", [latency(c, lognormal(1, 500, 0.05))])
    slower = write_run(tmp_path / "slower", [latency(c, lognormal(2, 700, 0.05))])
    env = {k: v for k, v in os.environ.items()
           if k not in ("GITHUB_STEP_SUMMARY", "MAKEFLAGS", "MAKELEVEL", "MFLAGS")}

    def make_gate(current, *extra):
        return subprocess.run(["make", "-s", "-C", str(gate.REPO), "gate", f"BASELINE={base}",
                               f"CURRENT={current}", f"GATE_FLAGS=--config {builtin}", *extra],
                              env=env, capture_output=True, text=True, timeout=120)
    passed = make_gate(base)
    assert passed.returncode == 0, passed.stderr
    assert "✅ pass" in passed.stdout
    failed = make_gate(slower)
    assert failed.returncode == 1, failed.stderr
    assert "❌" in failed.stdout and "gate: FAIL" in failed.stderr
    bad = make_gate(tmp_path / "nowhere")
    assert bad.returncode == 2 and "gate: not run" in bad.stderr


def test_make_gate_and_baseline_take_paths_with_spaces_and_quotes(tmp_path, builtin):
    """Issue 30, item 4: `make gate BASELINE="dir with space/x"` said "2
    --baseline runs": GATE_ARGS split the path into words."""
    c = common()
    spaced = tmp_path / "dir with space" / "it's"
    base = write_run(spaced / "x", [latency(c, lognormal(1, 500, 0.05))])
    current = write_run(spaced / "current run", [latency(c, lognormal(1, 500, 0.05))])
    env = {k: v for k, v in os.environ.items()
           if k not in ("GITHUB_STEP_SUMMARY", "MAKEFLAGS", "MAKELEVEL", "MFLAGS")}

    def make(*args):
        return subprocess.run(["make", "-s", "-C", str(gate.REPO), *args], env=env,
                              capture_output=True, text=True, timeout=120)
    flags = f"GATE_FLAGS=--config {builtin}"
    passed = make("gate", f"BASELINE={base}", f"CURRENT={current}", flags)
    assert passed.returncode == 0, passed.stderr
    assert "✅ pass" in passed.stdout and (current / gate.VERDICT_NAME).exists()
    missing = spaced / "nowhere"
    bad = make("gate", f"BASELINE={missing}", f"CURRENT={current}", flags)
    assert bad.returncode == 2
    assert f"{missing}: no such file or directory (the baseline)" in bad.stderr, bad.stderr
    assert "--baseline runs" not in bad.stderr
    stored = spaced / "stored baseline"
    done = make("baseline", f"CURRENT={current}", f"BASELINE={stored}")
    assert done.returncode == 0, done.stderr
    assert (stored / "results.jsonl").read_bytes() == (current / "results.jsonl").read_bytes()

# ---- runs that did not complete (issue 30) ----------------------------------------------

def gate_command(*args) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    return subprocess.run([str(gate.REPO / "ci" / "gate"), *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=120)


def test_an_incomplete_run_is_refused_by_the_gate_and_never_stored(tmp_path, capsys):
    """bench-all leaves incomplete.json in a run it did not complete: an
    interrupted run (no results.jsonl), a killed one (valid rows all the
    same). Neither is gated against, nor stored as the baseline."""
    good = write_run(tmp_path / "good", [latency(common(), lognormal(1, 500, 0.05))])
    stopped = interrupted_run(tmp_path / "stopped")
    killed = killed_run(tmp_path / "killed")
    stored = tmp_path / "stored" / "baseline.jsonl"
    for run, words in ((stopped, "was interrupted by SIGINT"), (killed, "did not finish"),
                       (killed / "results.jsonl", "did not finish")):
        for args in (["--baseline", good, "--current", run],
                     ["--baseline", run, "--current", good],
                     ["--store-baseline", "--current", run, "--baseline", stored]):
            code = gate.main([str(a) for a in args])
            err = capsys.readouterr().err
            assert code == 2, (args, err)
            assert f"{run}: the run started at 2026-11-26T17:02:09Z" in err
            assert words in err and "gate: not run" in err
            assert not stored.parent.exists()
    # the commands themselves (make gate, make baseline)
    for args in (["--baseline", good, "--current", killed],
                 ["--store-baseline", "--current", stopped, "--baseline", stored]):
        done = gate_command(*args)
        assert done.returncode == 2 and "gate: not run" in done.stderr, done.stderr
        assert "did not finish" in done.stderr or "interrupted" in done.stderr
    assert not stored.parent.exists()
    assert gate_command("--store-baseline", "--current", good, "--baseline", stored) \
        .returncode == 0
    assert stored.read_bytes() == (good / "results.jsonl").read_bytes()

# ---- the baseline written whole (issue 30) -------------------------------------------------

def test_the_baseline_is_written_whole_or_not_at_all(tmp_path, capsys, monkeypatch):
    """A baseline whose rename fails (a full or failing disk) leaves the old
    baseline as it was, no temporary file beside it, and one message naming
    the file; not an internal error."""
    old = write_run(tmp_path / "old", [latency(common(), lognormal(1, 500, 0.05))])
    new = write_run(tmp_path / "new", [latency(common(), lognormal(2, 600, 0.05))])
    target = tmp_path / "baseline"
    assert gate.main(["--store-baseline", "--current", str(old), "--baseline", str(target)]) == 0
    capsys.readouterr()

    def failing_replace(src, dst):
        raise OSError(errno.EIO, os.strerror(errno.EIO))
    monkeypatch.setattr(os, "replace", failing_replace)
    assert gate.main(["--store-baseline", "--current", str(new), "--baseline", str(target)]) == 2
    err = capsys.readouterr().err
    assert f"{target / 'results.jsonl'}: input/output error" in err and "internal" not in err
    assert sorted(p.name for p in target.iterdir()) == ["results.jsonl"]
    assert (target / "results.jsonl").read_bytes() == (old / "results.jsonl").read_bytes()

def test_the_default_current_run_names_a_newer_interrupted_run(tmp_path, capsys, monkeypatch):
    """Issue 30: after a Ctrl-C, `latest` still names the last complete
    run; the gate says that it judges that one, not the run just cut."""
    from results import run_state
    runs = tmp_path / "runs"
    done = write_run(runs / "20261126T171000Z-bbbbbb",
                     [latency(common(), lognormal(1, 500, 0.05))])
    cut = runs / "20261126T172000Z-cccccc"
    cut.mkdir()
    run_state.interrupted(cut, {"started": "t2", "pid": 1}, "SIGINT", "overhead")
    (runs / "latest").symlink_to(done.name)
    monkeypatch.setattr(gate, "DEFAULT_CURRENT", runs / "latest")
    code = gate.main(["--baseline", str(done)])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "20261126T172000Z-cccccc, newer than latest, is not used: the run started at t2 was " \
           "interrupted by SIGINT during its overhead step" in err
