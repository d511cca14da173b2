"""The time limit of bench-all's children (results/child.py)."""

import io
import os
import subprocess
import time

import pytest

from results import child

pytestmark = pytest.mark.serial  # times children and their deadlines (conftest.py)


def gone(pid: int, within_s: float = 5.0) -> bool:
    """Whether process `pid` has ended (or is a zombie) within `within_s`."""
    until = time.monotonic() + within_s
    while time.monotonic() < until:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


def test_a_child_that_ends_is_streamed_to_the_log_and_its_status_returned(capsys):
    log = io.StringIO()
    code = child.stream(["sh", "-c", "echo one; echo two >&2; exit 3"], log,
                        show=lambda line: line.startswith("two"))
    assert code == 3
    assert log.getvalue().splitlines() == ["one", "two"]
    assert capsys.readouterr().out == "  two\n"


def test_a_child_past_its_limit_is_killed_with_what_it_started(tmp_path, monkeypatch):
    monkeypatch.setenv(child.LIMIT_ENV, "0.5")
    pid_file = tmp_path / "grandchild"
    start = time.monotonic()
    with pytest.raises(child.TimedOut, match=r"^sh did not finish within 0.5 s "
                                             r"\(RAPLBENCH_STEP_LIMIT_S\); it was killed"):
        child.stream(["sh", "-c", f"sleep 60 & echo $! > {pid_file}; wait"], io.StringIO())
    assert time.monotonic() - start < 30
    assert gone(int(pid_file.read_text()))


def test_run_is_subprocess_run_with_the_limit(tmp_path, monkeypatch):
    done = child.run(["sh", "-c", "echo out; echo err >&2"], capture_output=True, text=True)
    assert (done.returncode, done.stdout, done.stderr) == (0, "out\n", "err\n")
    with pytest.raises(subprocess.CalledProcessError):
        child.run(["false"], check=True)
    monkeypatch.setenv(child.LIMIT_ENV, "0.5")
    pid_file = tmp_path / "grandchild"
    with pytest.raises(child.TimedOut, match="^sh did not finish within 0.5 s"):
        child.run(["sh", "-c", f"sleep 60 & echo $! > {pid_file}; wait"], capture_output=True)
    assert gone(int(pid_file.read_text()))


@pytest.mark.parametrize("text", ["0", "-1", "soon", "nan"])
def test_a_limit_that_is_not_a_positive_number_is_refused(monkeypatch, text):
    monkeypatch.setenv(child.LIMIT_ENV, text)
    with pytest.raises(ValueError, match=f"RAPLBENCH_STEP_LIMIT_S={text}: a number of seconds > 0"):
        child.limit_s()


def test_the_default_limit(monkeypatch):
    monkeypatch.delenv(child.LIMIT_ENV, raising=False)
    assert child.limit_s() == child.DEFAULT_LIMIT_S
    assert os.environ.get(child.LIMIT_ENV) is None
