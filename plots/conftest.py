"""Shared test fixtures: the stored fixture runs and a report built from them."""

import warnings
from pathlib import Path

import pytest

# matplotlib 3.9 calls pyparsing names that newer pyparsing deprecates (at import)
warnings.filterwarnings("ignore", message=".*deprecated - use", category=DeprecationWarning)

from plots import report
from plots.fixtures import AMD, INTEL
from plots.runs import load_references, load_runs


@pytest.fixture(scope="session")
def runs():
    return load_runs([INTEL, AMD])


@pytest.fixture(scope="session")
def refs():
    return load_references()


@pytest.fixture(scope="session")
def report_of(tmp_path_factory, refs):
    """report_of(*fixture_runs) -> (out, result): the report of those stored
    fixture runs (the first the reference), built once per session and shared
    by every test that asks for the same runs. Tests only read it: one that
    writes beside the report (a LaTeX build) copies what it needs first."""
    cache = {}

    def get(*paths):
        key = tuple(str(p) for p in paths)
        if key not in cache:
            out = tmp_path_factory.mktemp("report-" + "+".join(Path(p).name for p in paths))
            cache[key] = out, report.build(load_runs(list(paths)), refs, out)
        return cache[key]
    return get


@pytest.fixture(scope="session")
def built(tmp_path_factory, runs, refs):
    """The report of the two fixture machines (Intel first: the reference)."""
    out = tmp_path_factory.mktemp("report")
    result = report.build(runs, refs, out)
    return out, result
