"""The RAPL MSR table, read from the one place it is written:
kbench/rapl_msrs.h (kbench and ksample include it, rbench's build.rs parses
it). Python asks here for an MSR's name: "0x611" is "PKG energy".

One "RAPL_MSR(name, addr, vendor, kind, domain, reg, label)" row per line;
the header's comment says what each field is.
"""

import dataclasses
import re
from pathlib import Path

HEADER = Path(__file__).resolve().parent.parent / "kbench" / "rapl_msrs.h"
_ROW = re.compile(r"^\s*RAPL_MSR\((.*)\)\s*\\?$")


@dataclasses.dataclass(frozen=True)
class RaplMsr:
    name: str       # "INTEL_PKG" (the header's RAPL_MSR_INTEL_PKG)
    addr: int       # 0x611
    vendor: str     # "INTEL" or "AMD"
    kind: str       # "UNIT", "ENERGY" or "REFERENCE" (not RAPL)
    domain: str     # "package", "core", "uncore", "dram", "psys"; "" but for ENERGY
    register: str   # "MSR_PKG_ENERGY_STATUS"
    label: str      # "PKG energy": what the report shows

    @property
    def hex(self) -> str:
        """ "0x611", "0xc001029b": the spelling of result rows (lowercase hex)."""
        return f"{self.addr:#x}"


def parse(text: str) -> tuple[RaplMsr, ...]:
    """The header's rows, in its order (the quotes of its strings taken off)."""
    rows = ([f.strip().strip('"') for f in m.group(1).split(",")]
            for m in map(_ROW.match, text.splitlines()) if m)
    return tuple(RaplMsr(name, int(addr, 16), vendor, kind, domain, register, label)
                 for name, addr, vendor, kind, domain, register, label in rows)


MSRS = parse(HEADER.read_text())
# "0x611": "PKG energy", for every MSR of the table, either vendor's
LABELS = {m.hex: m.label for m in MSRS}
