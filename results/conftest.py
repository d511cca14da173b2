"""Shared test helpers: fixture trees of a machine (results/fixtures/machine-*).

A fixture tree keeps its cpuid records as text (dev/cpu/0/cpuid.leaves):
the device file they stand for is a sparse file with 16-byte records at
offset = leaf, and leaf 0x40000000 sits at 1 GiB, which git would store and
check out in full. `machine_root` copies a tree to a temporary directory and
writes that sparse file next to the text.
"""

import shutil
from pathlib import Path

import pytest

from results.machine import write_cpuid_records

FIXTURES = Path(__file__).with_name("fixtures")


def write_cpuid(path: Path, leaves: dict[int, tuple[int, int, int, int]]) -> None:
    """The sparse stand-in for /dev/cpu/N/cpuid (see machine.write_cpuid_records)."""
    write_cpuid_records(path, leaves)


def parse_leaves(text: str) -> dict[int, tuple[int, int, int, int]]:
    """`leaf eax ebx ecx edx` lines (hex, # comments) -> {leaf: registers}."""
    leaves = {}
    for line in text.splitlines():
        words = line.split("#")[0].split()
        if words:
            leaf, *regs = (int(w, 16) for w in words)
            leaves[leaf] = tuple(regs)
    return leaves


@pytest.fixture
def machine_root(tmp_path):
    """machine_root("machine-intel") -> a writable copy of that fixture tree
    with its dev/cpu/0/cpuid written."""
    def make(name: str) -> Path:
        root = tmp_path / name
        shutil.copytree(FIXTURES / name, root)
        for listing in root.glob("dev/cpu/*/cpuid.leaves"):
            write_cpuid(listing.with_suffix(""), parse_leaves(listing.read_text()))
        return root
    return make
