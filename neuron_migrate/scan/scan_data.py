"""The data a scan classifies with -- rules, the matrix of the target, the API map -- and its
digest, which every cached result is keyed by.

Reading the YAML files and checking them costs about 0.2 s, more than a whole re-scan that the
result cache answers. So the loaded data is also kept as one pickle beside the result cache,
named by the digest: it loads in a few milliseconds, and an edited rule or matrix (or other
code of the tool, `code_identity`) has another digest, so a stale copy is never read. The
pickle starts with a `DataHeader`, all a report needs when no file is analysed: reading it
imports nothing. Both
parts are sealed (`incremental.sealed`): read as data only, and checked by a checksum.
"""

import io
import os
import struct
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from neuron_migrate.code_identity import code_identity
from neuron_migrate.digests import cache_digest
from neuron_migrate.resources import digest_yaml, matrix_dir, rules_dir

if TYPE_CHECKING:  # loaded only when a file is analysed or the snapshot is made
    from neuron_migrate.matrix import Matrix
    from neuron_migrate.matrix.api_map import ApiMap
    from neuron_migrate.ruleset import RuleSet


class Context(NamedTuple):
    """What classification reads: the matrix for the target, the API map, the rules."""

    matrix: "Matrix"
    api_map: "ApiMap"
    rules: "RuleSet"


class DataHeader(NamedTuple):
    """What a report says of the data: the matrix version, its torch, the API map's coverage."""

    version: str
    torch_version: str
    api_map_coverage: tuple[int, int]

    @classmethod
    def of(cls, context: Context) -> "DataHeader":
        matrix = context.matrix
        return cls(matrix.version, matrix.torch_version, context.api_map.coverage())


def config_digest(target: str) -> str:
    """A digest of everything besides the file that a result depends on: the code, the target,
    the bundled data and, for a matrix file given as the target, its bytes (keyed by its stat,
    so an edited file is read again)."""
    if target.endswith((".yaml", ".yml")):
        stat = Path(target).stat()
        return _digest(target, (stat.st_mtime_ns, stat.st_size, stat.st_ino))
    return _digest(target, None)


@lru_cache(maxsize=4)
def _digest(target: str, signature: tuple[int, int, int] | None) -> str:
    digest = cache_digest(code_identity().encode() + b"\0" + target.encode())
    for folder in (rules_dir(), matrix_dir()):
        digest_yaml(digest, folder)
    if signature is not None:
        digest.update(Path(target).read_bytes())
    return digest.hexdigest()


def _snapshot(target: str, snapshot_dir: Path) -> Path:
    return snapshot_dir / f"data-{config_digest(target)[:32]}.pickle"


# The length of the sealed header, before it (the sealed context follows it).
_LENGTH = struct.Struct("<I")


def _read_header(handle: "io.BufferedReader") -> object:
    from neuron_migrate.incremental import sealed  # the cache's: only a cached scan gets here

    (length,) = _LENGTH.unpack(handle.read(_LENGTH.size))
    return sealed.loads(handle.read(length))


@lru_cache(maxsize=4)
def header_for(target: str, snapshot_dir: Path | None = None) -> DataHeader:
    """The header of the data for `target`; from the snapshot without loading the rest."""
    if snapshot_dir is not None:
        try:
            with _snapshot(target, snapshot_dir).open("rb") as handle:
                header = _read_header(handle)
            if isinstance(header, tuple) and len(header) == len(DataHeader._fields):
                return DataHeader(*header)
        except Exception:  # missing or unreadable: the full load below writes it
            pass
    return DataHeader.of(context_for(target, snapshot_dir))


# The data a server loaded before its children were forked, by digest.
_preloaded: dict[str, Context] = {}


def preload(targets: list[str]) -> None:
    """Load the data of `targets` into this process, for a server whose children fork from it:
    `context_for` answers from it whatever the snapshot folder. (The server stops when a data
    file changes on disk.)"""
    for target in targets:
        _preloaded[config_digest(target)] = _load(target)


@lru_cache(maxsize=4)
def context_for(target: str, snapshot_dir: Path | None = None) -> Context:
    """The data for `target`, from the snapshot in `snapshot_dir` when there is one (it is
    written there when there is not); from the YAML files when `snapshot_dir` is None."""
    preloaded = _preloaded.get(config_digest(target)) if _preloaded else None
    if preloaded is not None:
        return preloaded
    if snapshot_dir is None:
        return _load(target)
    from neuron_migrate.incremental import sealed  # the cache's: only a cached scan gets here

    path = _snapshot(target, snapshot_dir)
    try:
        with path.open("rb") as handle:
            if _read_header(handle) is not None:
                context = sealed.loads(handle.read())
                if isinstance(context, Context):
                    return context
    except Exception:  # missing, truncated or from an incompatible build: load afresh
        pass
    context = _load(target)
    header = sealed.dumps(tuple(DataHeader.of(context)))  # plain: reading it imports nothing
    whole = _LENGTH.pack(len(header)) + header + sealed.dumps(context)
    _write_atomically(path, whole)
    return context


def _load(target: str) -> Context:
    from neuron_migrate.matrix import load_matrix
    from neuron_migrate.matrix.api_map import load_api_map
    from neuron_migrate.ruleset import load_ruleset

    matrix = load_matrix(target)
    torch_minor = ".".join(matrix.torch_version.split(".")[:2])
    return Context(matrix=matrix, api_map=load_api_map(torch_minor), rules=load_ruleset())


def _write_atomically(path: Path, data: bytes) -> None:
    """Best effort: a cache folder that cannot be written only costs the next run the load."""
    import tempfile  # here: a run that finds the snapshot does not load it

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".data-", suffix=".tmp")
    except OSError:
        return
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except OSError:
        if os.path.exists(tmp):
            os.unlink(tmp)
