"""Google Benchmark for ubench: the source ci/gbench-source fetches, the
library ubench/gbench.cmake chooses, and what the built ubench links and says.

ubench builds Google Benchmark 1.7.1 with NDEBUG from Debian's source package
(pinned in ci/gbench-source.txt) and falls back to Debian's libbenchmark,
built without NDEBUG, only when that source cannot be had; it then says so,
at configure time and in every run's output (README, "Google Benchmark").
No test here needs the network: a mirror that cannot resolve stands for an
offline machine.
"""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

# not serial: CMake configures temporary builds; the checkout's build, its
# ubench and its source cache are only read (conftest.py)

REPO = Path(__file__).resolve().parent.parent
FETCH = REPO / "ci" / "gbench-source"
BUILD = REPO / "build"
UBENCH = BUILD / "raplbench-ubench"
OFFLINE = "http://raplbench-offline.invalid/debian"  # .invalid never resolves (RFC 2606)
DEBUG_WARNING = "***WARNING*** Library was built as DEBUG"


def pin() -> dict[str, str]:
    lines = (REPO / "ci" / "gbench-source.txt").read_text().splitlines()
    return dict(line.split(None, 1) for line in lines if line and not line.startswith("#"))


PIN = pin()
CACHED = REPO / ".cache" / "gbench" / PIN["file"]


def sha256(path: Path) -> str:
    import hashlib
    return hashlib.sha256(path.read_bytes()).hexdigest()


def source_is_cached() -> bool:
    """make deps fetched the pinned source into .cache/gbench/."""
    return CACHED.is_file() and sha256(CACHED) == PIN["sha256"]


def fetch(cache: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, RAPLBENCH_GBENCH_CACHE=str(cache),
               RAPLBENCH_DEBIAN_MIRROR=OFFLINE, TMPDIR=str(tmp_path))
    return subprocess.run([str(FETCH)], env=env, capture_output=True, text=True, timeout=120)


# ---- ci/gbench-source ---------------------------------------------------------

def test_pin_names_the_debian_source_of_the_library_debian_ships():
    assert set(PIN) == {"package", "suite", "version", "file", "sha256", "dir"}
    assert PIN["version"].startswith("1.7.1-")  # libbenchmark-dev of Debian 12
    assert len(PIN["sha256"]) == 64 and int(PIN["sha256"], 16) >= 0
    assert PIN["file"] == f"benchmark_{PIN['version'].split('-')[0]}.orig.tar.gz"


def test_offline_fetch_says_why_and_what_follows_and_does_not_fail(tmp_path):
    cache = tmp_path / "cache"
    done = fetch(cache, tmp_path)
    assert done.returncode == 0, done.stderr  # make deps goes on: ubench falls back
    assert "cannot fetch Google Benchmark's source" in done.stderr
    assert "raplbench-offline.invalid" in done.stderr  # the reason, from apt
    assert "Library was built as DEBUG" in done.stderr  # what the fallback means
    assert f"copy {PIN['file']} (sha256 {PIN['sha256']}) into {cache}/" in done.stderr
    assert not (cache / PIN["file"]).exists()
    assert not list(tmp_path.glob("raplbench-gbench.*"))  # its work directory is gone


def test_a_cached_source_with_the_pinned_checksum_needs_no_network(tmp_path):
    if not source_is_cached():
        pytest.skip(f"{CACHED} not fetched (make deps could not reach the archive)")
    cache = tmp_path / "cache"
    cache.mkdir()
    shutil.copy(CACHED, cache / PIN["file"])
    done = fetch(cache, tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_a_cached_file_with_another_checksum_is_fetched_again(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / PIN["file"]).write_bytes(b"not the source")
    done = fetch(cache, tmp_path)
    assert done.returncode == 0
    assert "fetching Google Benchmark's source" in done.stdout  # not taken as it is
    assert "cannot fetch" in done.stderr


# ---- ubench/gbench.cmake: which library -------------------------------------

def configure(tmp_path: Path, cache: Path, choice: str | None = None):
    args = ["cmake", "-S", str(REPO), "-B", str(tmp_path / "build"), "-G", "Ninja",
            "-DCMAKE_BUILD_TYPE=Release", f"-DRAPLBENCH_GBENCH_CACHE={cache}"]
    if choice:
        args.append(f"-DRAPLBENCH_GBENCH={choice}")
    return subprocess.run(args, capture_output=True, text=True, timeout=300)


def test_without_the_source_cmake_falls_back_to_debians_library_and_says_why(tmp_path):
    done = configure(tmp_path, tmp_path / "empty")
    assert done.returncode == 0, done.stderr
    warning = " ".join(done.stderr.split())
    assert "ubench links Debian's libbenchmark (built without NDEBUG" in warning
    assert f"{tmp_path / 'empty' / PIN['file']} missing (make deps fetches it" in warning
    assert "benchmark_DIR:PATH=/usr/lib/" in (tmp_path / "build" / "CMakeCache.txt").read_text()


def test_a_source_with_another_checksum_is_not_built(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / PIN["file"]).write_bytes(b"not the source")
    done = configure(tmp_path, cache)
    assert done.returncode == 0, done.stderr
    assert f"expected {PIN['sha256']}" in " ".join(done.stderr.split())
    assert not (tmp_path / "build" / "_deps" / "gbench").exists()


def test_source_required_but_missing_is_a_configure_error(tmp_path):
    done = configure(tmp_path, tmp_path / "empty", "source")
    assert done.returncode != 0
    assert "RAPLBENCH_GBENCH=source but" in done.stderr


def test_an_unknown_choice_is_refused(tmp_path):
    done = configure(tmp_path, tmp_path / "empty", "debian")
    assert done.returncode != 0
    assert "must be auto, source or system" in done.stderr


def test_system_is_debians_library_without_a_warning(tmp_path):
    done = configure(tmp_path, tmp_path / "empty", "system")
    assert done.returncode == 0, done.stderr
    assert "libbenchmark" not in done.stderr  # asked for: nothing to warn about


def test_the_cached_source_is_configured_with_ndebug(tmp_path):
    if not source_is_cached():
        pytest.skip(f"{CACHED} not fetched (make deps could not reach the archive)")
    done = configure(tmp_path, CACHED.parent)
    assert done.returncode == 0, done.stderr
    assert "built with NDEBUG" in done.stdout
    assert "libbenchmark" not in done.stderr
    assert (tmp_path / "build" / "_deps" / "gbench" / PIN["dir"] / "CMakeLists.txt").is_file()
    assert "git version" not in done.stdout  # upstream did not run git in raplbench's tree


# ---- the built ubench ---------------------------------------------------------

def configured_choice() -> str:
    for line in (BUILD / "CMakeCache.txt").read_text().splitlines():
        if line.startswith("RAPLBENCH_GBENCH:"):
            return line.split("=", 1)[1]
    return "auto"


@pytest.fixture(scope="module")
def ubench_run(tmp_path_factory):
    """One short run of the built ubench: (its JSON context, its console output)."""
    if not UBENCH.exists():
        pytest.skip(f"{UBENCH} not built (make build)")
    out = tmp_path_factory.mktemp("ubench") / "gbench.json"
    done = subprocess.run([str(UBENCH), "--benchmark_filter=^uinsn/nop/",
                           "--benchmark_min_time=0.001", f"--benchmark_out={out}",
                           "--benchmark_out_format=json"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(out.read_text())["context"], done.stdout + done.stderr


def links_debians_library() -> bool:
    ldd = subprocess.run(["ldd", str(UBENCH)], capture_output=True, text=True).stdout
    return "libbenchmark.so" in ldd


def test_ubench_uses_the_ndebug_build_wherever_the_source_was_fetched(ubench_run):
    context, console = ubench_run
    if configured_choice() == "system" or not source_is_cached():
        pytest.skip("this build links Debian's library (no source, or RAPLBENCH_GBENCH=system)")
    assert context["library_build_type"] == "release"
    assert not links_debians_library()
    assert "built here with NDEBUG" in context["raplbench_gbench_library"]
    assert DEBUG_WARNING not in console
    assert "raplbench_gbench_debug_warning" not in context


def test_ubench_says_which_library_it_links_and_explains_a_debug_warning(ubench_run):
    context, console = ubench_run
    library = context["raplbench_gbench_library"]
    assert f"raplbench_gbench_library: {library}" in console
    if context["library_build_type"] == "debug":  # the fallback: Debian's library
        assert links_debians_library()
        assert library.startswith("Debian's libbenchmark 1.7.1, built without NDEBUG")
        explanation = context["raplbench_gbench_debug_warning"]
        assert "never in the timed loop" in explanation and "make gbench-effect" in explanation
        # printed before the warning it explains
        assert console.index("raplbench_gbench_debug_warning: ") < console.index(DEBUG_WARNING)
    else:
        assert not links_debians_library()
        assert "with NDEBUG" in library
        assert DEBUG_WARNING not in console
