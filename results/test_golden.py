"""The golden files rbench's Rust tests read (results/golden) are what
results/stats.py and results/rows.py compute now: a change to either forces
`python -m results.golden`, and the Rust tests then check Rust agrees."""

import json

import pytest

from results import golden, rows, stats

REGENERATE = "out of date: run `.venv/bin/python -m results.golden` and commit the result"


@pytest.mark.parametrize("path, document", [
    (golden.SUMMARY_PATH, golden.summary_document),
    (golden.ROWS_PATH, golden.rows_document),
], ids=["summary", "rows"])
def test_golden_file_is_current(path, document):
    assert path.read_text(encoding="utf-8") == golden.render(document()), f"{path.name}: {REGENERATE}"


def test_summary_golden_covers_the_edge_cases():
    doc = json.loads(golden.SUMMARY_PATH.read_text(encoding="utf-8"))
    ns = {case["summary"]["n"] for case in doc["cases"]}
    assert {0, 1, 2, 3, 5, 10, 11, 30, 31, 100} <= ns
    assert doc["summary_keys"] == list(stats.SUMMARY_KEYS)
    assert all(list(case["summary"]) == list(stats.SUMMARY_KEYS) for case in doc["cases"])
    samples = [x for case in doc["cases"] for x in case["samples"]]
    assert min(samples) < 0 and any(x != int(x) for x in samples)
    assert [n for n, _, _ in doc["median_ci_ranks"][:200]] == list(range(1, 201))


def test_rows_golden_rows_are_valid_and_in_field_order():
    from results import schema

    doc = json.loads(golden.ROWS_PATH.read_text(encoding="utf-8"))
    assert doc["fields"] == list(rows.FIELDS)
    for case in doc["rows"]:
        assert list(case["row"]) == list(rows.FIELDS)
        assert schema.validate_row(case["row"]) == []
    assert {case["row"]["status"] for case in doc["rows"]} == {"ok", "error"}
