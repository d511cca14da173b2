import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from results import validate
from results.conftest import FIXTURES

GOLDEN = FIXTURES / "gbench-1.7.1.golden.jsonl"
# Rows the normalizer wrote under schema version 1 (before the liveness
# verdict), kept as they were: old runs must still validate.
SCHEMA1 = FIXTURES / "schema1-gbench-1.7.1.jsonl"
REPO = Path(__file__).resolve().parent.parent


def run(capsys, *files):
    code = validate.main([str(f) for f in files])
    out, err = capsys.readouterr()
    return code, out, err.splitlines()


def good_lines():
    return GOLDEN.read_text().splitlines()


def test_good_file_exits_0(capsys):
    code, out, err = run(capsys, GOLDEN)
    assert (code, err) == (0, [])
    assert out == f"{GOLDEN}: {len(good_lines())} rows valid\n"


def test_truncated_last_line_names_the_field(tmp_path, capsys):
    lines = good_lines()
    cut = lines[0].index('"samples": [') + len('"samples": [1589.99')
    path = tmp_path / "results.jsonl"
    path.write_text("\n".join(lines[1:] + [lines[0][:cut]]))  # the run died mid-write
    code, out, err = run(capsys, path)
    assert code == 2 and out == ""
    assert len(err) == 1
    assert err[0].startswith(f"{path}:{len(lines)}: samples: not valid JSON (truncated?): ")


def test_wrong_version_names_schema_version(tmp_path, capsys):
    rows = [json.loads(line) for line in good_lines()]
    rows[1]["schema_version"] = "4"
    path = tmp_path / "results.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, _, err = run(capsys, path)
    assert code == 2
    assert err == [f"{path}:2: schema_version: '4' is not one of ['1', '2', '3']"]


def test_schema_1_file_still_validates(capsys):
    assert all(json.loads(line)["schema_version"] == "1" and "liveness" not in json.loads(line)
               for line in SCHEMA1.read_text().splitlines())
    code, out, err = run(capsys, SCHEMA1)
    assert (code, err) == (0, [])
    assert out.endswith("rows valid\n")


def test_schema_1_and_2_rows_mix_in_one_file(tmp_path, capsys):
    path = tmp_path / "results.jsonl"
    path.write_text(SCHEMA1.read_text() + GOLDEN.read_text())
    code, _, err = run(capsys, path)
    assert (code, err) == (0, [])


def test_schema_2_row_without_its_verdict_names_the_field(tmp_path, capsys):
    rows = [json.loads(line) for line in good_lines()]
    del rows[0]["liveness"]
    path = tmp_path / "results.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, _, err = run(capsys, path)
    assert code == 2
    assert err[0].startswith(f"{path}:1: liveness: ")


def test_one_line_per_bad_row(tmp_path, capsys):
    rows = [json.loads(line) for line in good_lines()[:3]]
    rows[0]["cpu"] = -1
    del rows[2]["reason"]
    path = tmp_path / "results.jsonl"
    path.write_text(json.dumps(rows[0]) + "\n\n" + json.dumps(rows[1]) + "\n" + json.dumps(rows[2]) + "\n")
    code, _, err = run(capsys, path)
    assert code == 2
    assert [line.split(": ")[0:2] for line in err] == [
        [f"{path}:1", "cpu"], [f"{path}:2", "(row)"], [f"{path}:4", "reason"]]


@pytest.mark.parametrize("text", ["", "\n"])
def test_file_without_rows(tmp_path, capsys, text):
    path = tmp_path / "results.jsonl"
    path.write_text(text)
    code, _, err = run(capsys, path)
    assert code == 2
    assert err[-1] == f"{path}:0: (file): no rows"


def test_missing_file_exits_2_and_checks_the_others(tmp_path, capsys):
    missing = tmp_path / "nope.jsonl"
    code, out, err = run(capsys, missing, GOLDEN)
    assert code == 2
    assert err == [f"{missing}: cannot read: No such file or directory"]
    assert "rows valid" in out


def test_command_line_entry_point():
    done = subprocess.run([sys.executable, "-m", "results.validate", str(GOLDEN)],
                          cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.endswith("rows valid\n")


# ---- values JSON Schema cannot refuse (issue 14) ------------------------------

def with_first_row(tmp_path, edit) -> Path:
    """The golden file with its first line replaced by edit(first line)."""
    lines = good_lines()
    path = tmp_path / "results.jsonl"
    path.write_text("\n".join([edit(lines[0])] + lines[1:]) + "\n")
    return path


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_nan_or_infinity_in_a_row_is_refused_naming_its_field(tmp_path, capsys, constant):
    """Python's json reads NaN and Infinity; JSON has neither, and a NaN
    sample once passed `make validate` ("1 rows valid") and then broke the
    gate's statistics."""
    path = with_first_row(tmp_path, lambda line: line.replace('"samples": [',
                                                              f'"samples": [{constant}, ', 1))
    code, _, err = run(capsys, path)
    assert code == 2
    assert err[0].startswith(f"{path}:1: samples: {constant} is not JSON")
    path = with_first_row(tmp_path, lambda line: re.sub(r'"mean": [0-9.e+-]+',
                                                        f'"mean": {constant}', line))
    code, _, err = run(capsys, path)
    assert code == 2 and err[0].startswith(f"{path}:1: mean: {constant} is not JSON")


def test_a_string_holding_nan_is_not_a_constant(tmp_path, capsys):
    path = with_first_row(tmp_path,
                          lambda line: line.replace('"hostname": "', '"hostname": "NaN-', 1))
    code, _, err = run(capsys, path)
    assert (code, err) == (0, [])


def test_n_must_count_the_samples(tmp_path, capsys):
    first = json.loads(good_lines()[0])
    n = first["n"]
    path = with_first_row(tmp_path, lambda line: line.replace(f'"n": {n},', f'"n": {n + 1},', 1))
    code, _, err = run(capsys, path)
    assert code == 2
    assert err[0] == f"{path}:1: n: {first['n'] + 1}, but samples holds {first['n']} values"


def test_a_row_nested_too_deeply_is_an_error_not_a_crash(tmp_path, capsys):
    # (an object: a line that is not one is refused before it is parsed)
    path = with_first_row(tmp_path, lambda line: '{"samples": ' + "[" * 100_000
                          + "]" * 100_000 + "}")
    code, _, err = run(capsys, path)
    assert code == 2 and err[0] == f"{path}:1: (row): nested too deeply to be a row"


def test_in_memory_rows_with_nan_are_invalid():
    """Rows built in Python (a normalizer) are checked the same way."""
    from results import schema
    row = json.loads(good_lines()[0])
    row["samples"][2] = float("nan")
    row["machine"]["tsc_khz"] = float("inf")
    fields = [field for field, _ in schema.validate_row(row)]
    assert "samples[2]" in fields and "machine.tsc_khz" in fields


def test_reference_rows_keep_their_sources_n_without_samples(capsys):
    """A published figure has the paper's n and no samples."""
    for path in (REPO / "results" / "reference").glob("*.jsonl"):
        code, _, err = run(capsys, path)
        assert (code, err) == (0, []), path


# ---- runs that did not complete (issue 30) ------------------------------------------------

def test_an_incomplete_run_is_refused_by_name(tmp_path, capsys):
    """make validate FILE=... on a run bench-all did not complete: its rows
    may all be valid, the run is not one."""
    from results.test_runfile import interrupted_run, killed_run
    stopped = interrupted_run(tmp_path / "stopped")
    killed = killed_run(tmp_path / "killed")
    for path, words in ((stopped, "was interrupted by SIGINT during its overhead step"),
                        (killed, "did not finish"), (killed / "results.jsonl", "did not finish")):
        code, out, err = run(capsys, path)
        assert code == 2 and out == "" and len(err) == 1, err
        assert err[0].startswith(f"{path}: the run started at ") and words in err[0]
    code, out, err = run(capsys, GOLDEN, killed / "results.jsonl")
    assert code == 2 and "rows valid" in out and "did not finish" in err[0]
