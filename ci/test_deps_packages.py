"""ci/deps and the system packages (issue 32, item 1): make deps installs
what building, measuring and drawing need, make deps-test adds what only
the tests need, and a distribution without apt-get is told what to install.
Package managers are stubs on PATH, so nothing is installed or queried for
real: each stub answers from a list of "installed" names and logs its
calls."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.serial  # runs make and ci/deps on the checkout (conftest.py)

REPO = Path(__file__).resolve().parent.parent
TABLE = REPO / "ci" / "packages.tsv"
TEST_ONLY = {"chromium", "texlive-latex-base", "texlive-latex-recommended", "qemu-system-x86",
             "libgtest-dev"}
# what ci/deps itself runs, besides the package managers
TOOLS = ("bash", "awk", "sed", "cut", "tr", "cat", "id", "dirname", "sha256sum", "grep", "mktemp",
         "rm")


def table() -> list[list[str]]:
    """The rows of ci/packages.tsv: purpose, debian, dnf, pacman."""
    lines = TABLE.read_text().splitlines()
    return [line.split("\t") for line in lines if line.strip() and not line.startswith("#")]


def names(column: int, purposes: set[str]) -> list[str]:
    """The packages of `column` for `purposes`, cells split at commas."""
    return [p for row in table() if row[0] in purposes for p in row[column].split(",")]


@pytest.fixture
def system(tmp_path):
    """A checkout holding ci/deps and ci/packages.tsv, and a PATH of the
    tools ci/deps runs and of stubs the test adds with `stub`."""
    repo = tmp_path / "repo"
    (repo / "ci").mkdir(parents=True)
    for name in ("deps", "packages.tsv"):
        shutil.copy2(REPO / "ci" / name, repo / "ci" / name)
    (repo / "ci" / "requirements.txt").write_text("# nothing to install\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in TOOLS:
        found = shutil.which(tool)
        assert found, f"{tool} is not on PATH"
        (bin_dir / tool).symlink_to(found)
    log = tmp_path / "calls.log"
    installed = tmp_path / "installed"

    def stub(name: str, body: str):
        """A stub `name` on PATH: a bash script that may read $INSTALLED
        (a file of names, one per line) and append to $CALLS."""
        path = bin_dir / name
        path.write_text(f"#!{shutil.which('bash')}\n{body}\n")
        path.chmod(0o755)

    def run(*args: str, have=()):
        installed.write_text("".join(f"{n}\n" for n in have))
        log.write_text("")
        env = {"PATH": str(bin_dir), "INSTALLED": str(installed), "CALLS": str(log),
               "HOME": str(tmp_path)}
        done = subprocess.run([str(bin_dir / "bash"), str(repo / "ci" / "deps"), *args],
                              env=env, capture_output=True, text=True, timeout=60)
        return done, log.read_text().splitlines()

    stub("sudo", 'exec "$@"')
    return stub, run


def installed_query(name: str) -> str:
    """A stub body: `name ... PKG` exits 0 when PKG is in $INSTALLED."""
    return f'echo "{name} $*" >> "$CALLS"; grep -qxF -- "${{@: -1}}" "$INSTALLED"'


def test_the_table_is_well_formed_and_keeps_test_packages_out_of_bench():
    rows = table()
    assert rows and all(len(row) == 4 and all(row) for row in rows), rows
    assert {row[0] for row in rows} == {"bench", "test"}
    purpose = {row[1]: row[0] for row in rows}
    assert len(purpose) == len(rows), "a Debian package is listed twice"
    assert {p: purpose[p] for p in TEST_ONLY} == {p: "test" for p in TEST_ONLY}
    assert purpose["hyperfine"] == purpose["stress-ng"] == "bench"  # the experiments run them


def debian(stub):
    """dpkg-query and apt-get stubs: installed from $INSTALLED, installs logged."""
    stub("dpkg-query", 'grep -qxF -- "${@: -1}" "$INSTALLED" && echo installed || echo not-installed')
    stub("apt-get", 'echo "apt-get $*" >> "$CALLS"')


def test_make_deps_installs_no_browser_tex_or_qemu(system):
    stub, run = system
    debian(stub)
    bench = names(1, {"bench"})
    done, calls = run("--bogus", have=bench)  # a wrong argument: usage, exit 2
    assert done.returncode == 2 and "usage: ci/deps [--test | --python]" in done.stderr
    # everything for measuring there: ci/deps installs nothing, then goes on
    # to the venv (there is no python3 on this PATH: it stops there)
    done, calls = run(have=bench)
    assert calls == [], calls
    assert "python3 not found" in done.stderr, done.stderr
    # the tests' packages missing too: make deps still installs nothing
    done, calls = run(have=bench[1:])
    installs = [c for c in calls if c.startswith("apt-get") and " install " in c]
    assert installs and all(c.endswith(f" {bench[0]}") for c in installs), calls


def test_make_deps_test_adds_what_only_the_tests_need(system):
    stub, run = system
    debian(stub)
    done, calls = run("--test", have=names(1, {"bench"}))
    (install, *_) = [c for c in calls if " install " in c]
    assert set(install.split()[install.split().index("--no-install-recommends") + 1:]) \
        == set(names(1, {"test"})), install


@pytest.mark.parametrize("tool, query, column", [("dnf", "rpm", 2), ("pacman", "pacman", 3)])
def test_without_apt_get_the_missing_packages_are_named_in_the_distributions_words(
        system, tool, query, column):
    stub, run = system
    if tool != query:  # dnf installs, rpm answers what is installed
        stub(tool, f'echo "{tool} $*" >> "$CALLS"; exit 1')
    stub(query, installed_query(query))
    have = names(column, {"bench"})
    done, calls = run(have=have[2:])
    assert done.returncode == 2, done.stderr
    assert f"    {tool} install {have[0]} {have[1]}\n" in done.stderr, done.stderr
    assert "not a Debian system" in done.stderr
    assert not any(c.startswith(f"{tool} ") and " install" in c for c in calls), calls  # named, never run
    # with --test the test-only packages are named too
    done, _ = run("--test", have=have)
    wanted = names(column, {"test"})
    assert f"    {tool} install {' '.join(wanted)}\n" in done.stderr, done.stderr
    # all there: it goes on past the packages (to the venv: no python3 on PATH)
    done, _ = run(have=have)
    assert "not a Debian system" not in done.stderr and "python3 not found" in done.stderr, done.stderr


def test_with_no_known_package_manager_the_debian_names_are_given(system):
    _, run = system
    done, _ = run()
    assert done.returncode == 2
    assert "no apt-get, dnf or pacman here" in done.stderr
    assert all(f" {p} " in done.stderr for p in names(1, {"bench"})), done.stderr
    assert "chromium" not in done.stderr


@pytest.mark.skipif(not shutil.which("make"), reason="needs make")
def test_the_makefile_gives_each_purpose_its_command():
    """make -n: bench-all's build runs ci/deps alone; test runs ci/deps --test;
    report, validate and baseline need the venv alone (ci/deps --python).
    (make gate runs while make reads the Makefile, even under -n: its
    ci/deps --python is in the Makefile's text, not in a plan.)"""
    def planned(goal):
        done = subprocess.run(["make", "-n", "-C", str(REPO), goal], capture_output=True,
                              text=True, timeout=60, env={**os.environ, "MAKEFLAGS": ""})
        return done.stdout
    assert "ci/deps --test" not in planned("build") and "ci/deps" in planned("build")
    assert "ci/deps --test" in planned("test")
    for goal in ("report", "validate", "baseline"):
        deps = [line for line in planned(goal).splitlines() if "ci/deps" in line]
        assert deps and all("ci/deps --python" in line for line in deps), (goal, deps)
