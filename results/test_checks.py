from results.checks import format_checks, run_checks


def row(path, op, median, cpu=0, target_cpu=0, status="ok", harness="gbench"):
    return {"harness": harness, "path": path, "op": op, "metric": "latency",
            "status": status, "median": median, "cpu": cpu, "target_cpu": target_cpu}


def test_plausible_run_passes_every_check():
    rows = [row("uinsn", "nop", 0.3), row("ebpf-lookup", "lookup", 500),
            row("ebpf-mmap", "load", 17), row("perf", "read", 400),
            row("perf", "read", 4000, cpu=1)]
    assert [c.ok for c in run_checks(rows)] == [True, True, True]


def test_implausible_figures_are_flagged():
    rows = [row("uinsn", "nop", 5.0), row("ebpf-lookup", "lookup", 50),
            row("ebpf-mmap", "load", 17), row("perf", "read", 4000),
            row("perf", "read", 400, cpu=1)]
    assert [c.ok for c in run_checks(rows)] == [False, False, False]
    assert "UNEXPECTED" in format_checks(run_checks(rows))


def test_missing_or_unavailable_rows_are_not_measured():
    rows = [row("uinsn", "nop", None, status="unavailable")]
    assert [c.ok for c in run_checks(rows)] == [None, None, None]
