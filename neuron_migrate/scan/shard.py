"""`--shard I/N`: split a tree across CI runners, deterministically.

A file's shard is a hash of its report path, so every runner computes the same split without
talking to the others, and adding a file never moves the other files between shards.
"""

from __future__ import annotations

import re

from neuron_migrate.digests import sha256
from neuron_migrate.errors import UsageError

_SPEC = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


def parse_shard(spec: str) -> tuple[int, int]:
    """`"2/4"` -> (2, 4); shards are numbered from 1."""
    match = _SPEC.match(spec)
    if match is None:
        raise UsageError(f"--shard: expected I/N such as 1/4, not {spec!r}")
    index, count = int(match.group(1)), int(match.group(2))
    if count < 1 or not 1 <= index <= count:
        raise UsageError(f"--shard: {spec!r} is out of range (I must be between 1 and N)")
    return index, count


def shard_of(path: str, count: int) -> int:
    """The 1-based shard that owns `path` (a `/`-separated report path)."""
    digest = sha256(path.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % count + 1


def in_shard(path: str, shard: tuple[int, int]) -> bool:
    return shard_of(path, shard[1]) == shard[0]
