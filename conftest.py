"""make test runs the Python tests in two groups (Makefile, test-python):
first every test not marked serial, in parallel (pytest-xdist, a worker per
CPU); then the serial ones, one at a time, with the machine to themselves.
A test module is serial (pytestmark = pytest.mark.serial, with the reason)
when its tests time or measure something, run the harnesses or bench-all,
send signals to process groups, or change what the checkout shares (its
build, .venv, run lock, installed packages). Reading them is no reason:
`make gate` on runs in a temporary directory, ci/export through the .venv
and CMake configuring a temporary build from the checkout's sources all
run in parallel. A plain `pytest` runs them all in one process, as before."""
