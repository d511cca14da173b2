"""Shared test helpers: fixture trees of a machine (results/fixtures/machine-*).

A fixture tree keeps its cpuid records as text (dev/cpu/0/cpuid.leaves):
the device file they stand for is a sparse file with 16-byte records at
offset = leaf, and leaf 0x40000000 sits at 1 GiB, which git would store and
check out in full. `machine_root` copies a tree to a temporary directory and
writes that sparse file next to the text.
"""

import shutil
import struct
from pathlib import Path

import pytest

FIXTURES = Path(__file__).with_name("fixtures")


def write_cpuid(path: Path, leaves: dict[int, tuple[int, int, int, int]]) -> None:
    """Write a stand-in for /dev/cpu/N/cpuid: each leaf's (eax, ebx, ecx,
    edx) little-endian at offset = leaf, read back with pread like the device.
    Records 16 bytes apart or closer would overwrite each other, so they are
    refused (the real device has no such limit: the offset is only a key)."""
    ordered = sorted(leaves)
    for a, b in zip(ordered, ordered[1:]):
        if b - a < 16:
            raise ValueError(f"cpuid fixture leaves {a:#x} and {b:#x} overlap")
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        for leaf in ordered:
            f.seek(leaf)
            f.write(struct.pack("<4I", *leaves[leaf]))


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
