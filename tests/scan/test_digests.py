"""The digests that are seen outside the tool are SHA-256, whichever implementation."""

from __future__ import annotations

import hashlib

from neuron_migrate.digests import cache_digest, sha256
from neuron_migrate.scan.findings import fingerprint
from neuron_migrate.scan.shard import shard_of


def test_sha256_is_hashlibs() -> None:
    for data in (b"", b"abc", b"x" * 100_000):
        assert sha256(data).hexdigest() == hashlib.sha256(data).hexdigest()


def test_fingerprints_and_shards_are_of_sha256() -> None:
    key = "\x1f".join(("a/m.py", "NM101", "torch_xla.core.xla_model.xla_device", "d = x()", "0"))
    assert (
        fingerprint("a/m.py", "NM101", "torch_xla.core.xla_model.xla_device", " d =  x() ", 0)
        == (hashlib.sha256(key.encode()).hexdigest()[:20])
    )
    digest = hashlib.sha256(b"a/m.py").digest()
    assert shard_of("a/m.py", 7) == int.from_bytes(digest[:8], "big") % 7 + 1


def test_cache_digests_are_64_hex_digits() -> None:
    digest = cache_digest(b"abc")
    digest.update(b"def")
    assert digest.hexdigest() == hashlib.blake2b(b"abcdef", digest_size=32).hexdigest()
    assert len(digest.hexdigest()) == 64
