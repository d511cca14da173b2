"""Interrupted, killed, concurrent and out-of-disk runs of bench-all end in
a clear state (issue 30): each scenario runs the real bench-all (QUICK,
one step) as a separate process and looks at what it leaves behind.
Needs the build (make test builds first)."""

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from results import bench_all, run_lock, run_state
from results.test_child import gone

pytestmark = pytest.mark.serial  # runs bench-all, signals it and takes the checkout's run lock (conftest.py)

REPO = Path(__file__).resolve().parent.parent
STEPS = [name for name, _, _ in bench_all.HARNESSES]


def clean_env() -> dict:
    return {k: v for k, v in os.environ.items()
            if k not in bench_all.FIXTURE_HOOKS and k != run_lock.ENV}


class Run:
    """python -m results.bench_all --quick ARGS as its own process group
    (a terminal's foreground job), its stdout and stderr read line by line
    as they come."""

    def __init__(self, runs: Path, *args, env=None):
        self.runs = runs
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "results.bench_all", "--quick", "--runs-dir", str(runs),
             *args], cwd=REPO, env=env or clean_env(), stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, start_new_session=True)
        self.lines: list[str] = []
        self.err_lines: list[str] = []
        self.new_line = threading.Condition()
        self.readers = [threading.Thread(target=self._read, args=(stream, into), daemon=True)
                        for stream, into in ((self.proc.stdout, self.lines),
                                             (self.proc.stderr, self.err_lines))]
        for reader in self.readers:
            reader.start()

    def _read(self, stream, into: list[str]):
        for line in stream:
            with self.new_line:
                into.append(line)
                self.new_line.notify_all()

    def wait_for(self, text: str, timeout: float = 120, stderr: bool = False) -> None:
        lines = self.err_lines if stderr else self.lines
        until = time.monotonic() + timeout
        with self.new_line:
            while not any(text in line for line in lines):
                left = until - time.monotonic()
                if left <= 0 or self.proc.poll() is not None and not any(
                        r.is_alive() for r in self.readers):
                    raise AssertionError(f"never printed {text!r}: {''.join(lines)}")
                self.new_line.wait(min(left, 0.2))

    def finish(self, timeout: float = 120) -> tuple[int, str, str]:
        code = self.proc.wait(timeout=timeout)
        for reader in self.readers:
            reader.join(timeout=10)
        return code, "".join(self.lines), "".join(self.err_lines)

    def run_dir(self) -> Path:
        dirs = [d for d in self.runs.iterdir() if d.is_dir() and not d.is_symlink()]
        assert len(dirs) == 1, dirs
        return dirs[0]


def who(pids) -> list[str]:
    """What each of `pids` is now: pid, state, parent, process group and
    command line (for the message of a test that finds it still running)."""
    out = []
    for pid in sorted(pids):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:120]
            out.append(f"{pid} {stat[0]} ppid {stat[1]} pgid {stat[2]}: {cmd}")
        except OSError:
            out.append(f"{pid}: gone")
    return out


def left_running(pids, within_s: float = 2.0) -> list[str]:
    """who() of those of `pids` still running after `within_s`."""
    return who([pid for pid in pids if not gone(pid, within_s=within_s)])


def descendants(root: int) -> set[int]:
    """`root`'s descendants now (/proc/PID/task/TID/children: cheap enough
    to poll every few ms)."""
    found, todo = set(), [root]
    while todo:
        pid = todo.pop()
        for task in Path(f"/proc/{pid}/task").glob("*"):
            try:
                kids = [int(k) for k in (task / "children").read_text().split()]
            except OSError:
                continue
            for kid in kids:
                if kid not in found:
                    found.add(kid)
                    todo.append(kid)
    return found


def is_guardian(pid: int) -> bool:
    try:
        return b"results.guardian" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def children_appear(root: int, within_s: float = 10.0) -> set[int]:
    """`root`'s descendants as soon as one besides the guardian runs (or
    whatever runs after `within_s`)."""
    until = time.monotonic() + within_s
    while True:
        found = descendants(root)
        if any(not is_guardian(pid) for pid in found) or time.monotonic() > until:
            return found
        time.sleep(0.002)


def refused_by_the_gate(run_dir: Path, tmp_path: Path) -> None:
    """`make gate` and `make baseline` refuse the run by name (ci/gate,
    which both targets run)."""
    baseline = tmp_path / "baseline.jsonl"
    for args in (["--current", str(run_dir), "--baseline", str(run_dir)],
                 ["--store-baseline", "--current", str(run_dir), "--baseline", str(baseline)]):
        done = subprocess.run([str(REPO / "ci" / "gate"), *args], cwd=REPO, capture_output=True,
                              text=True, timeout=120)
        said = done.stdout + done.stderr
        assert done.returncode != 0, said
        assert run_dir.name in said, said
        assert "interrupted" in said or "did not finish" in said, said
    assert not baseline.exists()


@pytest.mark.parametrize("step", STEPS)
def test_ctrl_c_at_a_step_stops_its_children_and_leaves_an_interrupted_run(tmp_path, step):
    # a step that can end within milliseconds (kbench, where the module
    # cannot load) may win the race against the signal: try again
    for attempt in range(5):
        run = Run(tmp_path / f"try{attempt}" / "runs", "--only", step)
        run.wait_for(f"] {step} (")
        started = children_appear(run.proc.pid, within_s=3.0)
        os.killpg(run.proc.pid, signal.SIGINT)  # Ctrl-C: the terminal's whole foreground group
        code, out, err = run.finish()
        if code != 0:
            break
    else:
        pytest.skip(f"the {step} step ended before each of 5 signals")
    assert code == 128 + signal.SIGINT, out + err
    assert "Traceback" not in out + err
    said = [line for line in err.splitlines() if "interrupted by SIGINT" in line]
    assert len(said) == 1 and f"during the {step} step" in said[0], err
    assert not (left := left_running(started)), left
    run_dir = run.run_dir()
    assert "interrupted by SIGINT during its" in run_state.incomplete_reason(run_dir)
    assert not (run_dir / "results.jsonl").exists()
    assert not (run.runs / "latest").exists()
    if step == STEPS[0]:  # the gate's refusal does not depend on the step
        refused_by_the_gate(run_dir, tmp_path)


def test_ctrl_c_while_the_overhead_step_times_a_workload_under_a_sampler(tmp_path):
    """The case that became a "valid" run: the background sampler, stopped
    in a `finally`, had died of the same Ctrl-C and its failure replaced
    the interruption."""
    run = Run(tmp_path / "runs", "--only", "overhead")
    run.wait_for("  workload: ")
    time.sleep(1.0)  # into the paired rounds: a sampler in the background
    started = descendants(run.proc.pid)
    os.killpg(run.proc.pid, signal.SIGINT)
    code, out, err = run.finish()
    assert code == 130 and "Traceback" not in out + err, out + err
    assert "interrupted by SIGINT during the overhead step" in err
    assert "(validated)" not in out and not (run.runs / "latest").exists()
    assert not (left := left_running(started)), left


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_to_bench_all_alone_end_it_the_same_way(tmp_path, sig):
    run = Run(tmp_path / "runs", "--only", "sampler")
    run.wait_for("] sampler (")
    started = children_appear(run.proc.pid)
    os.kill(run.proc.pid, sig)  # bench-all alone, as `kill PID` or a closed terminal does
    code, out, err = run.finish()
    assert code == 128 + sig and "Traceback" not in err, out + err
    assert f"interrupted by {signal.Signals(sig).name} during the sampler step" in err
    assert not (left := left_running(started)), left



def test_a_signal_while_a_child_is_spawned_is_raised_once_the_child_is_known():
    """A Ctrl-C inside subprocess.Popen once left an eBPF sampler running for
    its whole --duration: child.spawn defers the interruption until the
    child is registered, so that kill_all finds it."""
    from results import child, interrupt

    previous = interrupt.install()
    try:
        with pytest.raises(interrupt.Interrupted):
            with interrupt.deferred():
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.05)  # the handler ran here, and raised nothing
                reached = True
        assert reached
        # a signal while Popen runs: the child is known when Interrupted comes
        seen = {}
        real_popen = subprocess.Popen

        def popen_then_signal(*a, **kw):
            proc = real_popen(*a, **kw)
            seen["pid"] = proc.pid
            os.kill(os.getpid(), signal.SIGINT)  # after the fork, inside Popen
            time.sleep(0.05)
            return proc

        interrupt.restore(previous)
        previous = interrupt.install()
        subprocess.Popen = popen_then_signal
        try:
            with pytest.raises(interrupt.Interrupted):
                child.spawn(["sleep", "30"])
        finally:
            subprocess.Popen = real_popen
        assert seen["pid"] in child._running
        child.kill_all()
        assert gone(seen["pid"], within_s=2.0)
    finally:
        interrupt.restore(previous)

def test_a_sigkilled_run_leaves_no_child_running(tmp_path):
    """The guardian (results/guardian.py) kills the step's children, here
    raplbench-interfere and the sampler it runs."""
    run = Run(tmp_path / "runs", "--only", "victim")
    run.wait_for("] victim (")
    until = time.monotonic() + 60
    while time.monotonic() < until:
        started = descendants(run.proc.pid)
        names = {Path(f"/proc/{p}/comm").read_text().strip() for p in started
                 if Path(f"/proc/{p}/comm").exists()}
        if any(n.startswith("raplbench-") for n in names):
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"no raplbench child appeared: {''.join(run.lines)}")
    os.kill(run.proc.pid, signal.SIGKILL)
    run.finish()
    left = [pid for pid in started if not gone(pid, within_s=2.0)]
    assert left == [], [Path(f"/proc/{p}/cmdline").read_bytes() for p in left]
    assert "did not finish" in run_state.incomplete_reason(run.run_dir())


def test_a_second_run_in_the_same_checkout_names_the_first_and_exits(tmp_path):
    runs = tmp_path / "runs"
    fd = run_lock.acquire(runs, command="the first run")
    try:
        run_lock.update(fd, run_id="20261126T170000Z-0001")
        run = Run(runs, "--only", "kbench")
        code, out, err = run.finish()
    finally:
        os.close(fd)
    assert code == 2, out + err
    assert "another run is in progress" in err and "20261126T170000Z-0001" in err
    assert f"pid {os.getpid()}" in err and "the first run" in err and "WAIT=1" in err
    assert f"kill -TERM {os.getpid()}" in err
    assert [d for d in runs.iterdir() if d.name != run_lock.LOCK_NAME] == []


def test_make_bench_all_refuses_before_it_builds(tmp_path):
    runs = REPO / "results" / "runs"
    try:
        fd = run_lock.acquire(runs, command="a test holding the checkout's lock")
    except run_lock.Busy as e:
        pytest.skip(f"a run of this checkout is in progress: {e}")
    try:
        started = time.monotonic()
        done = subprocess.run(["make", "-s", "bench-all", "QUICK=1"], cwd=REPO,
                              capture_output=True, text=True, timeout=120, env=clean_env())
        took = time.monotonic() - started
    finally:
        os.close(fd)
    assert done.returncode != 0
    assert "a test holding the checkout's lock" in done.stderr, done.stderr
    assert took < 10, took  # refused before make deps and the build


def test_with_wait_a_second_run_waits_and_each_run_draws_its_own_report(tmp_path):
    # The test holds the lock until both runs say they wait: two runs started
    # together race, and a quick first run may end before the second starts.
    runs = tmp_path / "runs"
    fd = run_lock.acquire(runs, command="the test holding the lock")
    try:
        waiting = [Run(runs, "--only", "kbench", "--report", "--wait") for _ in range(2)]
        for run in waiting:
            run.wait_for("waiting for", stderr=True)
            assert "the test holding the lock" in "".join(run.err_lines)
    finally:
        os.close(fd)
    results = [run.finish(timeout=300) for run in waiting]
    assert [code for code, _, _ in results] == [0, 0], results
    run_dirs = sorted(d for d in runs.iterdir() if d.is_dir() and not d.is_symlink())
    assert len(run_dirs) == 2
    for run_dir in run_dirs:
        page = (run_dir / "report" / "index.html").read_text()
        assert run_dir.name in page
        assert "latest" not in page
        assert run_state.incomplete_reason(run_dir) is None


def test_a_run_beside_other_work_says_the_machine_was_busy(tmp_path):
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)
        run = Run(tmp_path / "runs", "--only", "sampler", "--report")
        code, out, err = run.finish(timeout=300)
    finally:
        hog.kill()
        hog.wait()
    assert code == 0, out + err
    run_dir = run.run_dir()
    busy = json.loads((run_dir / "machine.json").read_text())["contention"]
    assert busy["busy"] and busy["steps"]["sampler"]["others_cpus"] >= 0.5, busy
    assert "python" in busy["reason"]
    assert "busy machine" in out
    assert "measured on a busy machine" in (run_dir / "report" / "index.html").read_text()
    assert "> NOTE: busy machine during sampler" in (run_dir / "agreement.md").read_text()


def in_a_small_filesystem(size: str, command: str) -> subprocess.CompletedProcess:
    """`command` (sh) with a tmpfs of `size` at /mnt, in a mount namespace
    of its own (an unprivileged user namespace: root is not needed)."""
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) not installed")
    probe = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "true"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"no user namespaces here: {probe.stderr.strip()}")
    return subprocess.run(
        ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c",
         f"mount -t tmpfs -o size={size} tmpfs /mnt && {command}"],
        cwd=REPO, env=clean_env(), capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("size, fill", [("64k", True), ("16k", False)],
                         ids=["full-from-the-start", "fills-during-the-run"])
def test_a_full_disk_is_one_line_naming_the_path(size, fill):
    fill_cmd = "dd if=/dev/zero of=/mnt/filler bs=4k 2>/dev/null; " if fill else ""
    done = in_a_small_filesystem(
        size, f"{fill_cmd}{sys.executable} -m results.bench_all --quick --only sampler "
              "--runs-dir /mnt/runs")
    said = done.stdout + done.stderr
    assert done.returncode == 1, said
    assert "Traceback" not in said
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("bench-all: /mnt/runs") and "no space left on device" in lines[0]


def test_an_interrupted_where_python_cannot_raise_is_not_printed_but_kept(monkeypatch):
    """A signal that lands in an at-fork handler or a __del__ (logging's
    _releaseLock after a fork printed "Exception ignored ... Traceback" in
    one unprivileged make test): not handed to the unraisable hook, and
    `check` raises it again; any other exception there still is."""
    from results import interrupt

    class RaisesOnDel:
        def __init__(self, exc):
            self.exc = exc

        def __del__(self):
            raise self.exc

    printed = []
    monkeypatch.setattr(sys, "unraisablehook", printed.append)
    previous = interrupt.install()
    try:
        interrupt._received = signal.SIGINT  # as the handler records it before raising
        RaisesOnDel(interrupt.Interrupted(signal.SIGINT))
        assert printed == []
        with pytest.raises(interrupt.Interrupted):
            interrupt.check()
        RaisesOnDel(ValueError("not a signal"))
        assert [type(u.exc_value) for u in printed] == [ValueError]
    finally:
        interrupt.restore(previous)
    assert sys.unraisablehook == printed.append
    interrupt.check()  # restore forgot the signal: later code in this process is not stopped
