"""The report's figures (matplotlib Agg backend, seaborn 0.13).

Every builder returns a matplotlib Figure (or None when it has nothing to
show) whose size in inches is fixed by the builder's arguments, saved at DPI
without tight cropping: a PNG's pixel size is exactly figsize x DPI (the
`*_size` functions), so tests can check it.

Every figure follows the conventions of plots/README.md ("How things are
marked"): latency on a log scale, each repetition a point, same CPU / other
CPU / not per-CPU in one colour each, stand-ins, frozen or unit-less
counters, emulated CPUs and rows that are not ok marked the same way in each.

The figures by kind are in figures_*.py (plots/README.md, "Modules"); this
module is the report's one entry point to them all.
"""

from plots.figures_common import (DEAD_HATCH, DEAD_LABEL, DPI, EMULATED_COLOR, STAND_IN_HATCH,
                                  latency_size, machines_size, pixels, reference_size, save)
from plots.figures_latency import latency_figure
from plots.figures_reference import ladder_figure, machines_figure, reference_figure
from plots.figures_sampler import overhead_figure, sampler_figure
from plots.figures_victim import idle_figure, victim_figure

__all__ = [
    # the figures
    "latency_figure", "ladder_figure", "reference_figure", "machines_figure", "sampler_figure",
    "overhead_figure", "victim_figure", "idle_figure",
    # sizes and saving
    "DPI", "latency_size", "reference_size", "machines_size", "pixels", "save",
    # style
    "STAND_IN_HATCH", "DEAD_HATCH", "DEAD_LABEL", "EMULATED_COLOR",
]
