"""Where a rewrite over a tree finds earlier results, and the keys it files them under.

The tree rewrite talks to a `RewriteStore`: the incremental cache
(`incremental.rewrite_cache.RewriteCache`, which the command line opens) or `NoRewriteCache`,
the plain path's, which holds nothing. A rewrite with `--no-cache` therefore never loads the
speed machinery, and this module never imports it.

The key covers everything a result depends on: the file's bytes, whether it is a notebook (or
which kind of project file), the tool version, unsafe fixes, the diff format and a digest of the
rules and matrices, and the target version (a dependency file's pins name the target matrix's
pair; a rewrite reads no other data, and not the file's path).
"""

from pathlib import Path
from typing import Any, NamedTuple, Protocol

from neuron_migrate.code_identity import code_identity
from neuron_migrate.digests import cache_digest
from neuron_migrate.resources import digest_yaml, matrix_dir, rules_dir
from neuron_migrate.rewrite.codemod.results import Outcome
from neuron_migrate.rewrite.unified_diff import FORMAT as diff_format


class CachedRewrite(NamedTuple):
    new: str | None  # the migrated source; None when the file does not change
    outcomes: tuple[Outcome, ...]
    hunks: str | None  # the unified diff after its two header lines, when a run made it
    # A file that does not parse, or a notebook some cells of which do not: its `FileError`'s
    # fields after its path (reason, kind, cell, partial).
    error: tuple[Any, ...] | None = None


def settings_digest(unsafe: bool, rules: Path | None = None, target: str | None = None) -> str:
    """A digest of what a rewrite depends on besides the file. `target`: the matrix version a
    rewrite pins and marks against (None: the newest, whichever the matrices say it is)."""
    settings = f"{code_identity()}\0unsafe={unsafe}\0diff={diff_format}\0target={target}"
    digest = cache_digest(settings.encode())
    digest_yaml(digest, rules or rules_dir())
    digest_yaml(digest, matrix_dir())  # a dependency file's pins name the target matrix's pair
    if target is not None and target.endswith((".yaml", ".yml")):  # a matrix file: its bytes
        digest.update(Path(target).read_bytes())
    return digest.hexdigest()


def rewrite_key(settings: str, data: bytes, notebook: bool, kind: str | None = None) -> str:
    """`kind`: the project file kind (shell, dockerfile, ...) when the file is not Python."""
    digest = cache_digest(data)
    digest.update(b"\0notebook\0" if notebook else b"\0source\0")
    if kind is not None:
        digest.update(kind.encode() + b"\0")
    digest.update(settings.encode())
    return digest.hexdigest()


class RewriteStore(Protocol):
    @property
    def directory(self) -> Path | None:
        """The cache's folder; None for a store that keeps nothing."""
        ...

    def get_many(self, keys: list[str]) -> dict[str, CachedRewrite]: ...

    def put(self, key: str, cached: CachedRewrite) -> None: ...

    def close(self) -> None: ...


class NoRewriteCache:
    """The store of a run that neither reads nor writes a cache (`--no-cache`, library calls)."""

    directory: Path | None = None

    def get_many(self, keys: list[str]) -> dict[str, CachedRewrite]:
        return {}

    def put(self, key: str, cached: CachedRewrite) -> None:
        pass

    def close(self) -> None:
        pass
