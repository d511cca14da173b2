"""The raplbench report: seaborn figures, latency tables fit to cite, the
published reference figures beside the local ones, machines side by side.

`python -m plots.report [RUNS...]` writes <run dir>/report/; plots/README.md
says what it contains and lists the modules, one concern each.
"""
