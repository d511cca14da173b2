"""Whether other work ran beside a run (results/contention.py)."""

import os
import subprocess
import sys
import time

import pytest

from results import contention
from results.contention import Snapshot

pytestmark = pytest.mark.serial  # measures the machine's other load (conftest.py)


def snap(at, ticks, steal=0, idle=100):
    # user nice system idle iowait irq softirq steal
    return Snapshot(at=at, ticks=ticks, cpu=[0, 0, 0, idle, 0, 0, 0, steal], load1=0.5)


def test_other_processes_count_and_the_runs_own_tree_does_not():
    a = snap(0.0, {(10, 1): ("bench", 1, 0), (11, 2): ("sampler", 10, 0),
                   (20, 3): ("make", 1, 100), (30, 4): ("cc1", 20, 0)})
    b = snap(2.0, {(10, 1): ("bench", 1, 50), (11, 2): ("sampler", 10, 150),
                   (12, 9): ("guardian", 10, 5), (20, 3): ("make", 1, 150),
                   (30, 4): ("cc1", 20, 100), (40, 7): ("cc1", 20, 30)}, steal=10, idle=290)
    got = contention.between(a, b, root=10, hz=100)
    # make: 0.5 s, cc1: 1.0 s + a new cc1 0.3 s; the run's own three never count
    assert got["others_cpu_s"] == 1.8 and got["others_cpus"] == 0.9
    assert got["steal_pct"] == 5.0
    assert got["top"][0] == {"command": "cc1", "cpu_s": 1.3}
    assert contention.is_busy(got)


def test_a_tick_of_a_daemon_in_a_short_step_is_not_busy():
    a = snap(0.0, {(10, 1): ("bench", 1, 0), (50, 5): ("kworker", 2, 0)})
    b = snap(0.05, {(10, 1): ("bench", 1, 5), (50, 5): ("kworker", 2, 1)})
    got = contention.between(a, b, root=10, hz=100)
    assert got["others_cpus"] >= contention.BUSY_OTHERS_CPUS  # 0.2 CPUs, on one tick
    assert not contention.is_busy(got)


def test_steal_alone_makes_a_step_busy():
    a = snap(0.0, {(10, 1): ("bench", 1, 0)})
    b = snap(1.0, {(10, 1): ("bench", 1, 0)}, steal=20, idle=280)
    got = contention.between(a, b, root=10, hz=100)
    assert got["others_cpus"] == 0 and got["steal_pct"] == 10.0
    verdict = contention.verdict({"latency": got})
    assert verdict["busy"] and "steal up to 10.0%" in verdict["reason"]


def test_a_quiet_run_has_no_reason():
    quiet = {"wall_s": 1.0, "others_cpu_s": 0.0, "others_cpus": 0.0, "steal_pct": 0.0,
             "load1": 0.1, "top": []}
    assert contention.verdict({"sampler": quiet}) == {
        "busy": False, "reason": None, "steps": {"sampler": quiet},
        "thresholds": {"others_cpus": contention.BUSY_OTHERS_CPUS,
                       "steal_pct": contention.BUSY_STEAL_PCT}}


def test_a_process_spinning_outside_the_run_is_seen_and_its_own_children_are_not(tmp_path):
    spinner = tmp_path / "raplspin"  # a name of its own in /proc/PID/stat
    spinner.symlink_to(sys.executable)
    spin = f"{spinner} -c 'import time\nt = time.time()\nwhile time.time() - t < 2: pass'"
    a = contention.snapshot()
    subprocess.run(["sh", "-c", spin], check=True)  # a child: the run's own work
    b = contention.snapshot()
    subprocess.run(["sh", "-c", f"{spin} &"], check=True)  # re-parented: someone else's (2 s)
    time.sleep(1.2)
    c = contention.snapshot()
    mine = contention.others_by_command(a, b, os.getpid())
    other = contention.others_by_command(b, c, os.getpid())
    assert "raplspin" not in mine, mine
    assert other.get("raplspin", 0) >= 0.1, other  # on a loaded machine it gets less than 1 s
