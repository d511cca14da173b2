"""The registry of access paths and sampler mechanisms, read from the one
place they are written: results/schema.json ($defs.path and $defs.mechanism,
a oneOf of consts whose x- keys say what each one is).

Everything in Python that needs "every path" or "every mechanism" asks here:
the harness steps (which paths a harness owes rows for), the figures (which
figure shows a path), the table order, the gate. rbench's plan names its
paths in its own source (rbench/src/paths/mod.rs, whose test checks them
against the registry, as results/test_ubench_plan.py does the plan's), and
each plan row carries its path's x-harnesses.
"""

import dataclasses

from results.schema import SCHEMA


@dataclasses.dataclass(frozen=True)
class PathInfo:
    id: str                 # "powercap"
    title: str              # what one operation is
    harnesses: tuple        # the harnesses that time it: ("gbench", "criterion")
    figure: str             # the report figure that shows it (a key of FIGURES)
    privilege: str          # what reading it needs


@dataclasses.dataclass(frozen=True)
class MechanismInfo:
    id: str                 # "msr"
    title: str              # what one tick reads
    path: str               # the access path each tick reads through ("msr-dev"; "kinsn"
                            # for kernel: the ksample module's in-kernel rdmsr)
    in_kernel: bool         # it ticks in the kernel: no user-space sampling thread to place
    design: str | None = None  # the published tool whose design it follows, named as the
                               # reference rows name it ("Ref_Rapl_Kernel"), or None
    uncounted_cpu: str | None = None  # why its CPU per tick cannot be measured (perf-ring:
                                      # the kernel samples in the timer interrupt), or None


_PATH_DEF = SCHEMA["$defs"]["path"]
# {figure id: title}, in the order the report shows them
FIGURES: dict[str, str] = dict(_PATH_DEF["x-figures"])
_PATHS = tuple(PathInfo(id=e["const"], title=e["title"], harnesses=tuple(e["x-harnesses"]),
                        figure=e["x-figure"], privilege=e["x-privilege"])
               for e in _PATH_DEF["oneOf"])
_MECHANISMS = tuple(MechanismInfo(id=e["const"], title=e["title"], path=e["x-path"],
                                  in_kernel=e["x-in-kernel"], design=e.get("x-design"),
                                  uncounted_cpu=e.get("x-uncounted-cpu"))
                    for e in SCHEMA["$defs"]["mechanism"]["oneOf"])

# the figure of the sampler's own rows (not a latency figure)
SAMPLER_FIGURE = "sampler"
# every path id, in the schema's order (the order of tables and figures)
PATHS: tuple[str, ...] = tuple(p.id for p in _PATHS)
# every sampler mechanism, in the schema's order
MECHANISMS: tuple[str, ...] = tuple(m.id for m in _MECHANISMS)


def path(path_id: str) -> PathInfo:
    """The registry entry of a path; KeyError naming the known paths."""
    for p in _PATHS:
        if p.id == path_id:
            return p
    raise KeyError(f"unknown access path {path_id!r} (known: {', '.join(PATHS)})")


def mechanism(mechanism_id: str) -> MechanismInfo:
    """The registry entry of a sampler mechanism; KeyError naming the known ones."""
    for m in _MECHANISMS:
        if m.id == mechanism_id:
            return m
    raise KeyError(f"unknown sampler mechanism {mechanism_id!r} (known: {', '.join(MECHANISMS)})")


def paths_of(harness: str) -> tuple[str, ...]:
    """The paths `harness` times, in registry order."""
    return tuple(p.id for p in _PATHS if harness in p.harnesses)


def paths_in_figure(figure: str) -> tuple[str, ...]:
    """The paths the report's figure `figure` shows, in registry order."""
    return tuple(p.id for p in _PATHS if p.figure == figure)
