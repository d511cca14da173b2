"""Shared test fixtures: the stored fixture runs and a report built from them."""

import warnings

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
def built(tmp_path_factory, runs, refs):
    """The report of the two fixture machines (Intel first: the reference)."""
    out = tmp_path_factory.mktemp("report")
    result = report.build(runs, refs, out)
    return out, result
