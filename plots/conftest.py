"""Shared test fixtures: the stored fixture runs and a report built from them."""

import fcntl
import hashlib
import os
import pickle
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
    writes beside the report (a LaTeX build) copies what it needs first.

    Under pytest-xdist the workers share it too: the first to ask builds it
    in their common temporary directory, holding a lock the others wait on
    (each worker built its own before: 28 s of CPU of make test)."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    cache = {}

    def get(*paths):
        key = tuple(str(Path(p).resolve()) for p in paths)
        if key not in cache:
            name = "report-" + "+".join(Path(p).name for p in paths)
            name += "-" + hashlib.sha256("\0".join(key).encode()).hexdigest()[:12]
            out, done = shared / name, shared / f"{name}.result.pickle"
            with open(shared / f"{name}.lock", "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                if not done.exists():
                    done.write_bytes(pickle.dumps(report.build(load_runs(list(paths)), refs, out)))
            cache[key] = out, pickle.loads(done.read_bytes())
        return cache[key]
    return get


@pytest.fixture(scope="session")
def built(report_of):
    """The report of the two fixture machines (Intel first: the reference)."""
    return report_of(INTEL, AMD)
