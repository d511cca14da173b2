"""ci/deps and the Python venv (issue 30, item 5): an existing .venv that
the user running make deps cannot use is never made again over itself
(python3 -m venv .venv had rewritten its pyvenv.cfg), and the message says
what is wrong; python3-venv is advised only where ensurepip is missing.
Each test copies ci/deps into a directory of its own: the real .venv is
never touched."""

import hashlib
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.serial  # runs ci/deps on the checkout (conftest.py)

REPO = Path(__file__).resolve().parent.parent
RUNUSER = shutil.which("runuser")


@pytest.fixture
def checkout():
    """A directory every user may enter (not under pytest's tmp_path, which
    only root may) holding ci/deps and a ci/requirements.txt of nothing."""
    base = Path(tempfile.mkdtemp(prefix="raplbench-deps-"))
    base.chmod(0o755)
    repo = base / "repo"
    (repo / "ci").mkdir(parents=True)
    shutil.copy2(REPO / "ci" / "deps", repo / "ci" / "deps")
    (repo / "ci" / "requirements.txt").write_text("# nothing to install\n")
    yield repo
    shutil.rmtree(base)


def snapshot(directory: Path) -> dict:
    """Every entry under `directory`: its link target or its bytes and mtime."""
    found = {}
    for path in sorted(directory.rglob("*")):
        if path.is_symlink():
            found[str(path)] = ("->", os.readlink(path))
        elif path.is_file():
            found[str(path)] = (path.read_bytes(), path.stat().st_mtime_ns)
        else:
            found[str(path)] = ("dir",)
    return found


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root, to make a venv and run as nobody")
@pytest.mark.skipif(RUNUSER is None, reason="needs runuser (util-linux) to run as nobody")
def test_a_venv_another_user_made_is_named_and_left_alone(checkout):
    """The venv of root, made with a Python under a directory only root may
    enter (as /root/.pyenv, /root being mode 700), and make deps run by
    nobody: it said `apt-get install python3-venv` and rewrote
    .venv/pyvenv.cfg with a python3 -m venv of its own."""
    private = checkout.parent / "root-only"
    private.mkdir(mode=0o700)
    (private / "python3").symlink_to(os.path.realpath(sys.executable))
    venv = checkout / ".venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python3").symlink_to(private / "python3")
    (venv / "bin" / "python").symlink_to("python3")
    (venv / "pyvenv.cfg").write_text(f"home = {private}\ninclude-system-site-packages = false\n"
                                     f"command = {private}/python3 -m venv {venv}\n")
    want = hashlib.sha256((checkout / "ci" / "requirements.txt").read_bytes()).hexdigest()
    (venv / ".requirements.sha256").write_text(want + "\n")
    # writable by anyone: nothing but ci/deps itself keeps the venv as it is
    for path in [checkout, *checkout.rglob("*")]:
        if not path.is_symlink():
            path.chmod(path.stat().st_mode | stat.S_IWOTH | stat.S_IROTH
                       | (stat.S_IXOTH if path.is_dir() else 0))
    before = snapshot(venv)

    done = subprocess.run([RUNUSER, "-u", "nobody", "--", str(checkout / "ci" / "deps"),
                           "--python"], cwd=checkout, capture_output=True, text=True,
                          timeout=120)
    said = done.stdout + done.stderr
    assert done.returncode != 0, said
    assert snapshot(venv) == before, said
    assert "python3-venv" not in said, said
    assert (f"deps: the venv's interpreter {private}/python3 is not executable by user nobody "
            f"({private} is closed to nobody): run make deps as the user who made .venv "
            "(root), or remove .venv") in done.stderr, said


def fake_python3(bin_dir: Path, venv_says: str, has_ensurepip: bool) -> dict:
    """An environment whose python3 fails `-m venv .venv` (after making a
    bit of it) saying `venv_says`; `import ensurepip, venv` works or not."""
    bin_dir.mkdir()
    script = bin_dir / "python3"
    script.write_text(f"""#!/bin/sh
case "$*" in
  "-m venv .venv") mkdir -p .venv/bin; echo '{venv_says}' >&2; exit 1 ;;
  "-c import ensurepip, venv") exit {0 if has_ensurepip else 1} ;;
esac
exit 3
""")
    script.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}:/usr/bin:/bin"}


def test_python3_venv_is_advised_only_for_want_of_ensurepip(checkout):
    no_space = "Error: [Errno 28] No space left on device: .venv/bin/python3"
    env = fake_python3(checkout.parent / "bin", no_space, has_ensurepip=True)
    done = subprocess.run([str(checkout / "ci" / "deps"), "--python"], cwd=checkout, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert no_space in done.stderr and "python3-venv" not in done.stderr, done.stderr
    assert "deps: python3 -m venv .venv failed (above)" in done.stderr
    assert not (checkout / ".venv").exists()  # its own half-made venv: gone

    debian = ("The virtual environment was not created successfully because ensurepip is not "
              "available.")
    shutil.rmtree(checkout.parent / "bin")
    env = fake_python3(checkout.parent / "bin", debian, has_ensurepip=False)
    done = subprocess.run([str(checkout / "ci" / "deps"), "--python"], cwd=checkout, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "has no ensurepip (Debian: apt-get install python3-venv" in done.stderr, done.stderr
    assert not (checkout / ".venv").exists()
