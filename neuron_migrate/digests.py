"""The digests the tool keys and names things by, without importing `hashlib`.

Importing `hashlib` loads OpenSSL: about 3.5 ms of a re-scan that the cache answers in a
tenth of a second, where the digests taken are of a few kilobytes. CPython's own
implementations give the same digests and load nothing.

- `sha256`: where a digest is seen outside the tool and must not change (finding fingerprints,
  which baselines hold; shard assignment). CPython's SHA-256 is about a fifth of OpenSSL's
  speed on large inputs, so it is kept for short ones.
- `cache_digest` (BLAKE2b): for what only the tool's caches are keyed and named by (file
  contents, the bundled data, the settings, the report snapshots and stat indexes): about as
  fast as OpenSSL's SHA-256 (1 GB/s here), and in every CPython.
"""

from __future__ import annotations

TYPE_CHECKING = False  # mypy reads this name as True
if TYPE_CHECKING:
    from hashlib import blake2b, sha256
else:
    try:
        from _sha2 import sha256  # CPython 3.12 and later
    except ImportError:
        try:
            from _sha256 import sha256  # CPython 3.10 and 3.11
        except ImportError:  # another interpreter: its hashlib
            from hashlib import sha256
    try:
        from _blake2 import blake2b
    except ImportError:
        from hashlib import blake2b

__all__ = ["cache_digest", "sha256"]


def cache_digest(data: bytes = b"") -> blake2b:
    """A BLAKE2b digest of 32 bytes (64 hex digits, as SHA-256's) for what only this tool's
    caches are keyed by."""
    return blake2b(data, digest_size=32)
