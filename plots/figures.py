"""The report's figures (matplotlib Agg backend, seaborn 0.13).

Every builder returns a matplotlib Figure (or None when it has nothing to
show) whose size in inches is fixed by the builder's arguments, saved at DPI
without tight cropping: a PNG's pixel size is exactly figsize x DPI (the
`*_size` functions), so tests can check it.

Conventions in every figure:
- latency on a log scale, "ns per operation (log scale)";
- each repetition is a point, over a box (or beside a median and its 95% CI);
- same CPU / other CPU / not per-CPU side by side in one colour each;
- stand-ins hatched "//" (hollow markers where there is no box) and named
  in the legend; emulated CPUs (qemu-tcg) hatched "xx", their panel titled
  in red "emulated CPU: not hardware figures";
- rows whose energy counter is frozen or has no energy unit (liveness,
  schema 2) hatched ".." with a dotted edge, "frozen" in the tick label
  (hollow pentagons where there is no box) and named in the legend: the
  latency is the route's cost, the counter yields no energy;
- rows that are not ok are a grey "x" at the foot of their slot (the
  tables give the reason).

The figures by kind: figures_latency.py (latency per path family),
figures_reference.py (the ladder, published figures, machines side by
side), figures_sampler.py (the 1 kHz sampler); what they share is in
figures_common.py, the label-overlap check in label_overlap.py. This module
is the report's one entry point to them all.
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
