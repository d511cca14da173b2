"""ci/ab: the order of the interleaved rounds and the gate on them, with the
bench-all runs replaced by synthetic ones (real rounds: ci/aa --rounds)."""

import contextlib
from pathlib import Path

import pytest

from ci import ab, gate
from ci.conftest import rounds_of


def test_abba_order_alternates_which_side_runs_first():
    assert ab.abba(3) == [(0, "baseline"), (0, "current"), (1, "current"), (1, "baseline"),
                          (2, "baseline"), (2, "current")]


def test_run_rounds_pairs_runs_by_round_and_wraps_only_current_runs(tmp_path, monkeypatch):
    calls, entered = [], []

    def fake_run(repo, runs_dir, log, only, quick=True, pad=None):
        calls.append((runs_dir.name, log.name, only, quick))
        made = runs_dir / f"2{len(calls):03d}"
        made.mkdir(parents=True)
        return made

    @contextlib.contextmanager
    def beside():
        entered.append(len(calls))
        yield

    monkeypatch.setattr(ab, "bench_run", fake_run)
    baselines, currents = ab.run_rounds(Path("/a"), Path("/b"), 3, tmp_path, "gbench",
                                        current_context=beside, progress=lambda _: None)
    assert [d.name for d in baselines] == ["2001", "2004", "2005"]
    assert [d.name for d in currents] == ["2002", "2003", "2006"]
    assert [c[1] for c in calls] == ["baseline-1.log", "current-1.log", "current-2.log",
                                     "baseline-2.log", "baseline-3.log", "current-3.log"]
    assert {c[2:] for c in calls} == {("gbench", True)}
    assert entered == [1, 2, 5]  # before each current run, never around a baseline run


def test_main_gates_the_rounds_and_returns_the_gates_status(tmp_path, monkeypatch, capsys):
    slow = rounds_of(tmp_path / "slow", slow_row=5)
    monkeypatch.setattr(ab, "run_rounds", lambda *a, **k: slow)
    code = ab.main(["--rounds", "6", "--runs-dir", str(tmp_path / "runs")])
    out, err = capsys.readouterr()
    assert code == 1, out + err
    assert "6 interleaved rounds" in out
    assert (tmp_path / "runs" / gate.VERDICT_NAME).is_file()

    same = rounds_of(tmp_path / "same")
    monkeypatch.setattr(ab, "run_rounds", lambda *a, **k: same)
    assert ab.main(["--rounds", "6", "--runs-dir", str(tmp_path / "runs2")]) == 0


def test_a_run_that_fails_exits_2_naming_its_log(tmp_path, monkeypatch, capsys):
    def failing(*a, **k):
        raise ab.RunFailed("bench-all of /x failed (exit 2): see /y/baseline-1.log")
    monkeypatch.setattr(ab, "run_rounds", failing)
    assert ab.main(["--runs-dir", str(tmp_path)]) == 2
    assert "see /y/baseline-1.log" in capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (["--rounds", "2"], "--rounds must be at least 3"),
    (["--baseline-repo", "/"], "not a raplbench checkout"),
])
def test_usage_errors(argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        ab.parse_args(argv)
    assert e.value.code == 2
    assert message in capsys.readouterr().err


def fake_checkout(root: Path, exit_code: int) -> Path:
    """A checkout whose bench-all makes one run directory (or fails)."""
    (root / "results").mkdir(parents=True)
    (root / "results" / "__init__.py").write_text("")
    (root / "results" / "bench_all.py").write_text(
        "import pathlib, sys\n"
        "runs = pathlib.Path(sys.argv[sys.argv.index('--runs-dir') + 1])\n"
        f"if {exit_code} == 0:\n"
        "    (runs / '20261123T000000Z-abcdef').mkdir(parents=True)\n"
        "import os\n"
        "print('argv', sys.argv[1:], __file__, 'pad', len(os.environ['RAPLBENCH_LAYOUT_PAD']))\n"
        f"sys.exit({exit_code})\n")
    return root


def test_bench_run_runs_that_checkouts_bench_all(tmp_path):
    repo = fake_checkout(tmp_path / "repo", 0)
    made = ab.bench_run(repo, tmp_path / "runs", tmp_path / "run.log", "gbench")
    assert made == tmp_path / "runs" / "20261123T000000Z-abcdef"
    log = (tmp_path / "run.log").read_text()
    assert "'--quick', '--only', 'gbench'" in log
    assert str(repo / "results" / "bench_all.py") in log  # the checkout's, not ours


def test_each_run_gets_a_layout_pad_of_random_length(tmp_path):
    repo = fake_checkout(tmp_path / "repo", 0)
    ab.bench_run(repo, tmp_path / "r1", tmp_path / "a.log", None, pad=123)
    log = (tmp_path / "a.log").read_text()
    assert log.startswith("ci/ab: RAPLBENCH_LAYOUT_PAD of 123 bytes\n") and "pad 123" in log
    pads = set()
    for i in range(8):
        ab.bench_run(repo, tmp_path / f"p{i}", tmp_path / f"p{i}.log", None)
        pads.add((tmp_path / f"p{i}.log").read_text().splitlines()[0])
    assert len(pads) > 1  # 8 draws from 4096 lengths: equal by chance with p < 1e-20


def test_bench_run_that_fails_names_its_log(tmp_path):
    repo = fake_checkout(tmp_path / "repo", 3)
    with pytest.raises(ab.RunFailed, match=r"failed \(exit 3\): see .*run.log"):
        ab.bench_run(repo, tmp_path / "runs", tmp_path / "run.log", None)
