"""make test runs the Python tests in two groups (Makefile, test-python):
first every test not marked serial, in parallel (pytest-xdist, a worker per
CPU); then the serial ones, one at a time, with the machine to themselves.
A test module is serial (pytestmark = pytest.mark.serial, with the reason)
when its tests time or measure something, run the harnesses or bench-all,
send signals to process groups, or use what the checkout shares (its
build, .venv, run lock, make). A plain `pytest` runs them all in one
process, as before."""
