"""plots/runs.py: the report refuses a run that did not complete (issue 30)."""

from plots import report
from results.test_runfile import interrupted_run, killed_run


def test_the_report_refuses_an_incomplete_run_by_name(tmp_path, capsys):
    stopped = interrupted_run(tmp_path / "stopped")
    killed = killed_run(tmp_path / "killed")
    for run, words in ((stopped, "was interrupted by SIGINT"), (killed, "did not finish"),
                       (killed / "results.jsonl", "did not finish")):
        code = report.main([str(run), "--out", str(tmp_path / "report")])
        err = capsys.readouterr().err.splitlines()
        assert code == 2 and len(err) == 1, err
        assert err[0].startswith(f"report: {run}: the run started at ") and words in err[0]
        assert not (tmp_path / "report").exists()
