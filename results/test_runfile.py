"""Tests of the run-file loader the report and the gate share (results/runfile.py)."""

import json
import os
import pwd
import subprocess

import pytest

from results import rows, run_state, runfile

MACHINE = {
    "hostname": "runner-1", "cpu_vendor": "GenuineIntel", "cpu_family": 6, "cpu_model": 167,
    "cpu_stepping": 1, "cpu_model_name": "Intel(R) Xeon(R) Processor", "microcode": "0x1",
    "kernel": "6.18.44", "hypervisor": "kvm", "smt": False, "governor": None, "boost": None,
    "tsc_khz": 2599998, "mitigations": {"spectre_v2": "Mitigation: Retpolines"},
}
COMMON = rows.common("20261122T000000Z-000001", "2026-11-22T00:00:00Z", MACHINE)


def row(op="read", samples=(1.0, 2.0, 3.0)):
    return rows.measured_row(COMMON, harness="gbench", path="perf", op=op, target="msr/tsc/",
                             cpu=0, target_cpu=0, metric="latency", unit="ns",
                             samples=list(samples))


def write(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def test_locate_a_run_directory_or_a_file(tmp_path):
    f = tmp_path / runfile.RESULTS_FILE
    rows.write_jsonl([row()], f)
    assert runfile.locate(tmp_path) == tmp_path / runfile.RESULTS_FILE
    assert runfile.locate(f) == f


def test_locate_in_the_reports_words_and_the_gates(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(runfile.RunFileError,
                       match="^x/nowhere: no such run directory or results file$"):
        runfile.locate("x/nowhere")
    with pytest.raises(runfile.RunFileError) as e:
        runfile.locate(tmp_path / "empty")
    assert str(e.value) == f"{tmp_path / 'empty'}: not a run directory (no results.jsonl in it)"
    assert e.value.path == tmp_path / "empty"
    with pytest.raises(runfile.RunFileError) as e:
        runfile.locate("x/nowhere", role="baseline", hint=": store one", show=lambda p: f"<{p}>")
    assert str(e.value) == "<x/nowhere>: no such file or directory (the baseline): store one"
    with pytest.raises(runfile.RunFileError, match="no results.jsonl in this directory "
                                                   r"\(the current run must be"):
        runfile.locate(tmp_path / "empty", role="current run")


def test_load_keeps_line_numbers_and_rows(tmp_path):
    a, b = row("read"), {**row("group-read"), "stand_in": "msr/tsc/ stands in\u2028(µ)"}
    f = write(tmp_path / "r.jsonl", [json.dumps(a), json.dumps(b, ensure_ascii=False)])
    loaded = runfile.load(f)
    assert loaded.path == f and loaded.lines == ((1, a), (2, b)) and loaded.rows == [a, b]


def test_a_bad_file_names_file_and_line_in_both_wordings(tmp_path):
    good = json.dumps(row())
    bad = json.dumps({**row(), "samples": "many"})
    lines = [good, bad] + [bad] * 6 + [good[:40]]
    f = write(tmp_path / "r.jsonl", lines)
    with pytest.raises(runfile.RunFileError) as e:
        runfile.load(f)  # the gate: every bad row, then the count
    message = str(e.value).splitlines()
    assert message[0] == f"{f}:2: samples: 'many' is not of type 'array'"
    assert message[7].startswith(f"{f}:9: ") and "not valid JSON" in message[7]
    assert message[8] == f"{f}: 8 invalid rows (results/schema.json; make validate FILE=... " \
                         "says the same)"
    assert [line for line, _, _ in e.value.errors] == list(range(2, 10))
    with pytest.raises(runfile.RunFileError) as e:
        runfile.load(f, max_errors=5)  # the report: a heading, the first five
    message = str(e.value).splitlines()
    assert message[0] == f"{f}: invalid results file" and len(message) == 7
    assert message[-1] == f"... and 3 more (python -m results.validate {f})"


def test_an_unreadable_file(tmp_path):
    with pytest.raises(runfile.RunFileError, match="^missing.jsonl: cannot read: No such file"):
        runfile.load("missing.jsonl")


# ---- what locate says when it cannot look (issue 30) ------------------------------------

def test_a_symlink_loop_is_named_as_such_not_as_missing(tmp_path):
    """Path.exists() is False on ELOOP: the loop was reported as "no such
    file or directory"."""
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    with pytest.raises(runfile.RunFileError) as e:
        runfile.locate(loop)
    assert str(e.value) == f"{loop}: too many levels of symbolic links"
    with pytest.raises(runfile.RunFileError) as e:
        runfile.locate(loop, role="baseline", hint=": store one", show=lambda p: f"<{p}>")
    assert str(e.value) == f"<{loop}>: too many levels of symbolic links (the baseline)"
    run = tmp_path / "run"
    run.mkdir()
    (run / runfile.RESULTS_FILE).symlink_to(run / runfile.RESULTS_FILE)
    with pytest.raises(runfile.RunFileError) as e:
        runfile.locate(run, role="current run")
    assert str(e.value) == (f"{run / runfile.RESULTS_FILE}: too many levels of symbolic links "
                            "(the current run)")


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root, to become nobody in a child")
def test_permission_denied_is_named_as_such(tmp_path):
    """Run as the user nobody (a forked child: root reads everything), a
    run behind a directory nobody may not enter."""
    locked = tmp_path / "locked"
    run = locked / "run"
    run.mkdir(parents=True)
    rows.write_jsonl([row()], run / runfile.RESULTS_FILE)
    locked.chmod(0o700)
    assert as_nobody(lambda: runfile.locate(run)) == f"{run}: permission denied"
    assert as_nobody(lambda: runfile.locate(run / runfile.RESULTS_FILE)) == \
        f"{run / runfile.RESULTS_FILE}: permission denied"
    assert as_nobody(lambda: runfile.locate(run, role="baseline")) == \
        f"{run}: permission denied (the baseline)"


def as_nobody(call) -> str:
    """str() of the RunFileError that call() raises as the user nobody, in
    a forked child (or what else happened)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never back into pytest
        try:
            os.close(read)
            os.setgid(pwd.getpwnam("nobody").pw_gid)
            os.setuid(pwd.getpwnam("nobody").pw_uid)
            try:
                said = f"returned {call()!r}"
            except runfile.RunFileError as e:
                said = str(e)
            except Exception as e:  # (Path.exists() raised PermissionError)
                said = f"raised {type(e).__name__}: {e}"
            os.write(write, said.encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as f:
        said = f.read().decode()
    os.waitpid(pid, 0)
    return said


# ---- runs that did not complete (issue 30) ------------------------------------------------

def dead_pid() -> int:
    """The pid of a process that has ended."""
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def interrupted_run(directory):
    """A run directory bench-all left on Ctrl-C: its marker, no results."""
    directory.mkdir()
    state = run_state.begin(directory, "2026-11-26T17:02:09Z")
    run_state.interrupted(directory, state, "SIGINT", "overhead")
    return directory


def killed_run(directory):
    """A run whose bench-all was killed (SIGKILL) after writing valid rows:
    a "running" marker of a process that is gone."""
    directory.mkdir()
    rows.write_jsonl([row()], directory / runfile.RESULTS_FILE)
    (directory / run_state.MARKER).write_text(json.dumps(
        {"state": "running", "pid": dead_pid(), "started": "2026-11-26T17:02:09Z"}))
    return directory


def test_an_incomplete_run_is_refused_by_name_before_its_rows(tmp_path):
    stopped = interrupted_run(tmp_path / "stopped")
    killed = killed_run(tmp_path / "killed")
    for arg, words in ((stopped, "was interrupted by SIGINT during its overhead step"),
                       (killed, "did not finish"),
                       (killed / runfile.RESULTS_FILE, "did not finish")):
        for role in (None, "baseline"):
            with pytest.raises(runfile.RunFileError) as e:
                runfile.locate(arg, role=role, show=lambda p: f"<{p}>")
            shown = f"<{arg}>" if role else str(arg)
            why = run_state.incomplete_reason(arg if arg.is_dir() else arg.parent)
            assert str(e.value) == f"{shown}: {why}" and words in why
    run_state.finish(killed)  # completed after all: its rows are a run's
    assert runfile.locate(killed) == killed / runfile.RESULTS_FILE
