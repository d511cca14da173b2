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

from plots.figures_common import (DEAD_HATCH, DEAD_LABEL, DEAD_MARKER, DPI, EMULATED_COLOR,
                                  EMULATED_FACE, EMULATED_HATCH, LADDER_SIZE, LATENCY_AXIS,
                                  MACHINE_COLORS, NOT_OK_COLOR, OVERHEAD_SIZE, PLACEMENT_COLORS,
                                  PUBLISHED_STYLE, SAMPLER_SIZE, STAND_IN_HATCH, latency_size,
                                  log_ticks, machines_size, pixels, ratio_ticks, reference_size,
                                  save)
from plots.figures_latency import family_rows, latency_figure
from plots.figures_reference import (OTHER, RUNGS, SAME_OR_NONE, ladder_figure, machines_figure,
                                     reference_figure, reference_quantities, rung_of, rung_row)
from plots.figures_sampler import (MECHANISM_ORDER, overhead_figure, sampler_category,
                                   sampler_figure, sampler_rows)
from plots.figures_victim import idle_figure, victim_figure

__all__ = [
    # the figures
    "latency_figure", "ladder_figure", "reference_figure", "machines_figure", "sampler_figure",
    "overhead_figure", "victim_figure", "idle_figure",
    # sizes and saving
    "DPI", "latency_size", "LADDER_SIZE", "reference_size", "machines_size", "SAMPLER_SIZE",
    "OVERHEAD_SIZE", "pixels", "save",
    # style
    "LATENCY_AXIS", "STAND_IN_HATCH", "EMULATED_HATCH", "DEAD_HATCH", "DEAD_MARKER", "DEAD_LABEL",
    "EMULATED_COLOR", "EMULATED_FACE", "NOT_OK_COLOR", "PLACEMENT_COLORS", "MACHINE_COLORS",
    "PUBLISHED_STYLE", "log_ticks", "ratio_ticks",
    # what the figures show
    "family_rows", "RUNGS", "SAME_OR_NONE", "OTHER", "rung_row", "rung_of", "reference_quantities",
    "sampler_rows", "sampler_category", "MECHANISM_ORDER",
]
