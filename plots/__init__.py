"""The raplbench report: seaborn figures, latency tables fit to cite, the
published reference figures beside the local ones, machines side by side.

`python -m plots.report [RUNS...]` writes <run dir>/report/ (see
plots/README.md). Modules, one concern each:

    runs.py        loading and validating run directories / results.jsonl files
    labels.py      names for machines, path families, CPU placement, MSRs, targets
    pairing.py     which local row stands beside a published figure or another machine's
    tables.py      the table model and its Markdown, CSV, LaTeX and HTML renderings
    report_tables.py          the report's tables (latency, sampler), and their cells;
    report_tables_compare.py  those that compare: published figures, machines
    report_tables_overhead.py the sampler's overhead: published, local, design
    report_tables_stats.py    the significance tables (report_tables_steps.py: their procedure)
    figures.py     the figures (matplotlib Agg backend, seaborn), by kind in
                   figures_latency.py, figures_reference.py, figures_sampler.py;
                   what they share in figures_common.py
    label_overlap.py  do a figure's texts overlap (the tests, crowded latency figures)
    htmlpage.py    index.html: one self-contained page
    report.py      the command line
    transcribe_references.py   results/reference/*.jsonl from the papers' tables
"""
