"""`rewrite` over a tree: read each file, migrate it (or find its result in the cache), then show
a diff, write it in place atomically, or write a migrated copy of the tree. One file failing
never stops the run."""

import multiprocessing
import os
import shutil
import tempfile
import time
import traceback
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from neuron_migrate import __version__
from neuron_migrate.digests import cache_digest
from neuron_migrate.gc_tuning import FEW_CYCLES, collect_less, collecting_less
from neuron_migrate.parent_watch import die_with_parent
from neuron_migrate.project.discover import (
    NOTEBOOK_SUFFIX,
    discover,
    is_folder_link,
    may_hold_findings,
    unlisted_folder,
)
from neuron_migrate.project.source import decode, read_bytes, syntax_error
from neuron_migrate.rewrite.codemod.results import Outcome, RewriteFailed, StatementTooLarge
from neuron_migrate.rewrite.leftovers import (
    IMPORT_MARKERS,
    stood_in_names,
    unguarded_torch_xla_imports,
)
from neuron_migrate.rewrite.store import (
    CachedRewrite,
    NoRewriteCache,
    RewriteStore,
    rewrite_key,
    settings_digest,
)
from neuron_migrate.rewrite.unified_diff import diff_header, diff_path, unified_diff
from neuron_migrate.ruleset import RuleSet, load_ruleset
from neuron_migrate.scan.findings import FileError
from neuron_migrate.scan.time_budget import OverBudget, budget_s, time_budget

if TYPE_CHECKING:
    from neuron_migrate.project.config import Config
    from neuron_migrate.rewrite.codemod.engine import SourceRewrite

SCHEMA_VERSION = 1
# The error of a file holding a statement too long to parse (`codemod.trim`): like a timeout, a
# verdict of this run's settings (NEURON_MIGRATE_MAX_STATEMENT), not cached, and the run exits 2.
TOO_LARGE_STATEMENT = "too_large_statement"
# Files left as they were though they may need a change.
_FAILED = ("internal", "timeout", TOO_LARGE_STATEMENT)


@dataclass(frozen=True)
class FileRewrite:
    path: str  # absolute (or as given): where the file is read and written
    display: str  # relative to the root, forward slashes
    old: str = ""
    new: str = ""
    encoding: str = "utf-8"
    bom: bool = False
    outcomes: tuple[Outcome, ...] = ()
    error: FileError | None = None
    patch: str | None = None  # the diff, when made where the file was rewritten
    from_cache: bool = False  # the result was stored by an earlier run
    # A digest of the bytes the rewrite read (`read_digest`): `--apply` replaces only those.
    read: bytes | None = None
    # Sites whose rewrite made code that does not parse (a bug of a transform): left as they
    # were, marked, and reported (`engine.rewrite_source`).
    refused: tuple[Outcome, ...] = ()

    @property
    def changed(self) -> bool:
        return self.read_through and self.new != self.old

    @property
    def read_through(self) -> bool:
        """Rewritten, all of it or the part that could be read (a notebook's cells that
        parse, beside an error naming those that do not)."""
        return self.error is None or self.error.partial

    def count(self, status: str) -> int:
        return sum(1 for o in self.outcomes if o.status == status)

    @cached_property
    def torch_xla_imports(self) -> list[int]:
        """Lines (of the new module) of the torch_xla imports that stop the migrated file
        where torch_xla is missing; none when it runs without torch_xla."""
        return self._read_new(unguarded_torch_xla_imports)

    @cached_property
    def stood_in(self) -> list[str]:
        """What the names the new module binds to a stand-in where torch_xla is missing name."""
        return self._read_new(stood_in_names)

    def _read_new(self, read: Callable[[str], list[Any]]) -> list[Any]:
        """`read` of the new module's source (a notebook's code cells); [] for a file that
        could not be migrated."""
        if self.error is not None:
            return []
        if not self.display.endswith(NOTEBOOK_SUFFIX):
            return read(self.new)
        from neuron_migrate.project.notebook import NotebookError, split_notebook

        try:
            return read(split_notebook(self.new).source)
        except NotebookError:
            return []

    @property
    def raise_if_reached(self) -> list[Outcome]:
        """The sites left for a person that use a name bound to a stand-in: where torch_xla is
        missing the program starts, and each raises NotImplementedError (naming its rule and
        advice) when it runs."""
        names = self.stood_in
        if not names:
            return []
        return [
            o
            for o in self.outcomes
            if o.status in ("marked", "ambiguous")
            and o.code not in IMPORT_MARKERS
            and any(o.api == n or o.api.startswith(n + ".") for n in names)
        ]

    @property
    def stop_at_start(self) -> int:
        """How many sites left for a person stop the program at start where torch_xla is
        missing: those that hold its torch_xla imports (or the imports themselves, held by
        nothing else)."""
        if not self.torch_xla_imports:
            return 0
        return len(self.held_by) or len(self.torch_xla_imports)

    @property
    def held_by(self) -> list[Outcome]:
        """The sites left for a person that keep a torch_xla import in the migrated file: a
        torch_xla name still called, a star import, a name of several meanings."""
        if not self.torch_xla_imports:
            return []
        return [
            o
            for o in self.outcomes
            if o.status in ("marked", "ambiguous")
            and o.code not in IMPORT_MARKERS
            and (o.api.startswith("torch_xla") or o.status == "ambiguous" or o.code == "NM197")
        ]

    @property
    def already_marked(self) -> int:
        """Sites left for a person whose markers an earlier run wrote: every one of a file the
        rewrite leaves as it is (a marker it would add would change it)."""
        return 0 if self.changed else self.count("marked") + self.count("ambiguous")

    def diff(self) -> str:
        if self.patch is not None:
            return self.patch
        return unified_diff(self.old, self.new, diff_path(self.path, self.display))

    def encoded(self) -> bytes:
        data = self.new.encode(self.encoding)
        return b"\xef\xbb\xbf" + data if self.bom else data

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.display,
            "changed": self.changed,
            "rewritten": self.count("rewritten"),
            "kept": self.count("kept"),
            "marked": self.count("marked"),
            "ambiguous": self.count("ambiguous"),
            "runs_without_torch_xla": not self.torch_xla_imports,
            "torch_xla_held_by": [{"code": o.code, "line": o.line} for o in self.held_by],
            "raise_if_reached": [{"code": o.code, "line": o.line} for o in self.raise_if_reached],
            "sites": [
                {"code": o.code, "line": o.line, "api": o.api, "status": o.status}
                for o in self.outcomes
            ],
        }


def rewrite_source(
    source: str, ruleset: RuleSet, *, unsafe: bool, target: str | None = None
) -> "SourceRewrite":
    """`rewrite.codemod.engine.rewrite_source`, which loads libcst: imported by the first
    file migrated, so that a run the cache answers never loads it."""
    from neuron_migrate.rewrite.codemod.engine import rewrite_source as migrated

    return migrated(source, ruleset, unsafe=unsafe, target=target)


def rewrite_file(
    path: str, display: str, ruleset: RuleSet, *, unsafe: bool, target: str | None = None
) -> FileRewrite:
    """Migrate one file; every failure comes back as a FileError, never as an exception."""
    data = read_bytes(path, display)
    if isinstance(data, FileError):
        return FileRewrite(path, display, error=data)
    return rewrite_data(path, display, data, ruleset, unsafe=unsafe, target=target)


class _Text(NamedTuple):
    text: str  # what the rewrite reads: `FileRewrite.old`
    encoding: str  # what the new text is written in
    bom: bool


def _text_of(display: str, data: bytes) -> _Text | FileError:
    """A file's text as the rewrite reads it: a notebook's JSON, or the decoded source."""
    if display.endswith(NOTEBOOK_SUFFIX):
        try:
            return _Text(data.decode("utf-8"), "utf-8", False)
        except UnicodeDecodeError as exc:
            return FileError(display, f"not valid utf-8 at byte {exc.start}", "encoding")
    source = decode(data, display)
    if isinstance(source, FileError):
        return source
    encoding = source.encoding if source.encoding != "utf-8-sig" else "utf-8"
    return _Text(source.text, encoding, source.data.startswith(b"\xef\xbb\xbf"))


def rewrite_data(
    path: str,
    display: str,
    data: bytes,
    ruleset: RuleSet,
    *,
    unsafe: bool,
    target: str | None = None,
) -> FileRewrite:
    """Migrate a file from its bytes, within the scan's per-file time budget
    (`scan.time_budget`); every failure comes back as a FileError. `target`: the torch-neuronx
    version (a matrix) whose pair pins and markers name; None: the newest."""
    limit = budget_s()
    try:
        with time_budget(limit):
            return _migrated(path, display, data, ruleset, unsafe=unsafe, target=target)
    except OverBudget:
        reason = f"took more than {limit:g} s to rewrite (NEURON_MIGRATE_FILE_BUDGET_S)"
        return FileRewrite(path, display, error=FileError(display, reason, "timeout"))


def _migrated(
    path: str, display: str, data: bytes, ruleset: RuleSet, *, unsafe: bool, target: str | None
) -> FileRewrite:
    if not may_hold_findings(data, display):
        return FileRewrite(path, display)
    text = _text_of(display, data)
    if isinstance(text, FileError):
        return FileRewrite(path, display, error=text)
    if display.endswith(NOTEBOOK_SUFFIX):
        return _rewrite_notebook(path, display, text.text, ruleset, unsafe=unsafe, target=target)
    kind = _project_kind(display, data)
    if kind is not None:
        return _rewrite_project_file(
            path, display, text, kind, ruleset, unsafe=unsafe, target=target
        )
    source = text.text
    try:
        result = rewrite_source(source, ruleset, unsafe=unsafe, target=target)
    except SyntaxError as exc:
        error = _internal_error(exc, display) if _built(exc) else syntax_error(exc, display)
        return FileRewrite(path, display, source, source, error=error)
    except RewriteFailed as exc:
        return FileRewrite(
            path, display, source, source, error=FileError(display, str(exc), "internal")
        )
    except StatementTooLarge as exc:
        error = FileError(display, str(exc), TOO_LARGE_STATEMENT)
        return FileRewrite(path, display, source, source, error=error)
    except OverBudget:
        raise
    except Exception as exc:  # a bug in a transform must not end the run over the tree
        return FileRewrite(path, display, source, source, error=_internal_error(exc, display))
    new, outcomes = result.new, result.outcomes
    if display.endswith("setup.py"):  # its install_requires / python_requires literals too
        new, outcomes = _setup_py_dependencies(new, outcomes, ruleset, unsafe=unsafe, target=target)
    return FileRewrite(
        path,
        display,
        result.old,
        new,
        encoding=text.encoding,
        bom=text.bom,
        outcomes=outcomes,
        refused=result.refused,
    )


def _built(exc: SyntaxError) -> bool:
    """A node a transform built that libcst refuses (its CSTValidationError is a SyntaxError):
    a bug of ours, not a file that does not parse."""
    from libcst import CSTValidationError

    return isinstance(exc, CSTValidationError)


def _internal_error(exc: Exception, display: str) -> FileError:
    last = traceback.extract_tb(exc.__traceback__)[-1]
    where = f"{Path(last.filename).name}:{last.lineno}"
    reason = f"internal error: {type(exc).__name__}: {exc} ({where})"
    return FileError(display, reason, "internal")


def _setup_py_dependencies(
    source: str,
    outcomes: tuple[Outcome, ...],
    ruleset: RuleSet,
    *,
    unsafe: bool,
    target: str | None,
) -> tuple[str, tuple[Outcome, ...]]:
    """The migrated setup.py with its dependency markers (and pins under --unsafe-fixes);
    as it was if its literals cannot be read."""
    from neuron_migrate.project_files.readers import UnreadableFile
    from neuron_migrate.project_files.rewrite import rewrite_project_text, target_pair

    try:
        deps = rewrite_project_text(
            source, "setup-py", ruleset.rules, target_pair(target), unsafe=unsafe
        )
    except UnreadableFile:
        return source, outcomes
    extra = tuple(Outcome(u.code, u.line, u.api, u.status) for u in deps.uses)
    return deps.text, outcomes + extra


def _rewrite_notebook(
    path: str, display: str, text: str, ruleset: RuleSet, *, unsafe: bool, target: str | None
) -> FileRewrite:
    """A notebook's code cells migrated as one module (`neuron_migrate.project.notebook`): magics,
    outputs and the JSON layout are kept. Outcome lines are lines of that module."""
    from neuron_migrate.project.notebook import (
        NotebookError,
        cells_error,
        split_notebook,
        transform_notebook,
        unread_cells,
    )

    outcomes: list[Outcome] = []
    refused: list[Outcome] = []

    def migrate(module: str) -> str:
        result = rewrite_source(module, ruleset, unsafe=unsafe, target=target)
        # A site on the stand-in of a cell that does not parse is not one: that cell is left
        # as it is, unmarked.
        kept = [o for o in result.outcomes if module is not split.source or split.locate(o.line)]
        outcomes.extend(kept)
        refused.extend(result.refused)
        return result.new

    try:
        split = split_notebook(text)
        new = transform_notebook(text, migrate, split)
    except NotebookError as exc:
        return FileRewrite(path, display, text, text, error=FileError(display, str(exc), "syntax"))
    except SyntaxError as exc:
        error = _internal_error(exc, display) if _built(exc) else syntax_error(exc, display)
        return FileRewrite(path, display, text, text, error=error)
    except RewriteFailed as exc:
        return FileRewrite(
            path, display, text, text, error=FileError(display, str(exc), "internal")
        )
    except StatementTooLarge as exc:
        error = FileError(display, str(exc), TOO_LARGE_STATEMENT)
        return FileRewrite(path, display, text, text, error=error)
    unread, read = unread_cells(text, split) if split.language == "python" else ([], True)
    unparsed = cells_error(display, unread, partial=read) if unread else None  # left as is
    return FileRewrite(
        path, display, text, new, outcomes=tuple(outcomes), error=unparsed, refused=tuple(refused)
    )


def _project_kind(display: str, data: bytes) -> str | None:
    """The project file kind of a file `rewrite` reads (None: Python). setup.py is Python here:
    its install_requires literals are reported by `scan`, not edited."""
    if display.endswith(".py"):
        return None
    from neuron_migrate.project_files.kinds import kind_of

    return kind_of(display, data)


def _rewrite_project_file(
    path: str,
    display: str,
    text: _Text,
    kind: str,
    ruleset: RuleSet,
    *,
    unsafe: bool,
    target: str | None,
) -> FileRewrite:
    """A launch script, Dockerfile, dependency file or job config (`project_files`)."""
    from neuron_migrate.project_files.readers import UnreadableFile
    from neuron_migrate.project_files.rewrite import rewrite_project_text, target_pair

    old = text.text
    pair = target_pair(target)
    try:
        result = rewrite_project_text(old, kind, ruleset.rules, pair, unsafe=unsafe)
    except UnreadableFile as exc:
        return FileRewrite(path, display, old, old, error=FileError(display, str(exc), "syntax"))
    outcomes = tuple(Outcome(u.code, u.line, u.api, u.status) for u in result.uses)
    # Statements that do not parse: left as they are, named, beside the rest's rewrite.
    unread = (
        None if result.unread is None else FileError(display, result.unread, "syntax", partial=True)
    )
    return FileRewrite(
        path, display, old, result.text, text.encoding, text.bom, outcomes=outcomes, error=unread
    )


class Job(NamedTuple):
    """A file to migrate, with its bytes as the main process read them (and hashed them)."""

    path: str
    display: str
    data: bytes
    key: str | None  # where its result goes in the cache; None without one


Cache = RewriteStore
Planned = list[FileRewrite | Job]  # a stretch of the tree's files, in order
Settings = tuple[bool, bool, str]  # unsafe fixes, diffs, the target matrix version

# Files read, hashed and looked up in the cache at a time (one query).
_LOOKUP = 256
# Files per task: a task's round trip costs about as much as rewriting a small file.
_BATCH = 8
# How a worker rewrites: set by the pool initializer.
_WORKER: Settings | None = None


def rewrite_tree(
    root: Path,
    *,
    unsafe: bool = False,
    exclude: tuple[str, ...] = (),
    jobs: int = 1,
    diffs: bool = False,
    cache: Cache | None = None,
    config: "Config | None" = None,
    on_progress: Callable[[int, int], None] | None = None,
    target: str | None = None,
) -> Iterator[FileRewrite]:
    """Every discovered file migrated, in discovery order (`rewrite_sources`). `config`: the
    project's `[tool.neuron-migrate]` (`project.config.resolve_config`), whose `exclude` a
    rewrite honours as a scan does: one configuration for every command. `on_progress(done,
    total)` is called once the files are found, then after each result."""
    found = list(discover(root, exclude, notebooks=True, project_files=True, folder_links=True))
    if config is not None:
        from neuron_migrate.project.config import make_policy

        policy = make_policy(config, root if root.is_dir() else root.parent)
        found = [s for s in found if not policy.excluded(s.display)]
    # A folder the walk could not list is named first (as a file not read); a link to a
    # folder is not followed, and a rewrite says nothing of it.
    unlisted = [(s, unlisted_folder(s)) for s in found if is_folder_link(s)]
    for folder, why in unlisted:
        if why is not None:
            error = FileError(folder.display, why, "unreadable")
            yield FileRewrite(folder.path, folder.display, error=error)
    sources = [(s.path, s.display) for s in found if not is_folder_link(s)]
    results = rewrite_sources(
        sources, unsafe=unsafe, jobs=jobs, diffs=diffs, cache=cache, target=target
    )
    if on_progress is None:
        yield from results
        return
    on_progress(0, len(sources))
    for done, result in enumerate(results, 1):
        yield result
        on_progress(done, len(sources))


def rewrite_sources(
    sources: list[tuple[str, str]],
    *,
    unsafe: bool = False,
    jobs: int = 1,
    diffs: bool = False,
    cache: Cache | None = None,
    target: str | None = None,
) -> Iterator[FileRewrite]:
    """Each (path, display) migrated, in the given order. With `jobs` > 1 the files are
    rewritten in a pool of forked worker processes; the results still come in input order.
    `diffs`: each changed file's diff is made where it is rewritten (`FileRewrite.patch`).
    `cache`: where results are looked up (by the file's bytes) and stored. `target`: the
    torch-neuronx version (resolved, as `matrix.resolve_version` gives it; None: the newest)."""
    from neuron_migrate.matrix.versions import resolve_version  # file names only

    cache = cache or NoRewriteCache()
    target = resolve_version(target)  # the newest, named: one cache key either way
    settings = (unsafe, diffs, target)
    keyed = settings_digest(unsafe, target=target) if cache.directory is not None else None
    planned = _planned(sources, cache, keyed)
    if jobs <= 1 or len(sources) <= 1:
        with collecting_less(FEW_CYCLES):
            for items in planned:
                for item in items:
                    yield _rewrite_here(item, settings, cache) if isinstance(item, Job) else item
        return
    yield from _rewrite_in_pool(planned, settings, cache, jobs=min(jobs, len(sources)))


def _planned(sources: list[tuple[str, str]], cache: Cache, keyed: str | None) -> Iterator[Planned]:
    """The files in order, `_LOOKUP` at a time, each one either answered here (unreadable,
    nothing a rewrite could change, or found in the cache) or a job to migrate it."""
    for start in range(0, len(sources), _LOOKUP):
        items: Planned = []
        for path, display in sources[start : start + _LOOKUP]:
            data = read_bytes(path, display)
            if isinstance(data, FileError):
                items.append(FileRewrite(path, display, error=data))
            elif not may_hold_findings(data, display):
                items.append(FileRewrite(path, display))
            else:
                notebook = display.endswith(NOTEBOOK_SUFFIX)
                kind = _project_kind(display, data)
                key = rewrite_key(keyed, data, notebook, kind) if keyed is not None else None
                items.append(Job(path, display, data, key))
        keys = [item.key for item in items if isinstance(item, Job) and item.key is not None]
        found = cache.get_many(keys) if keys else {}
        for at, item in enumerate(items):
            if isinstance(item, Job) and item.key in found:
                items[at] = _from_cache(item, found[item.key]) or item
        yield items


def _from_cache(job: Job, cached: CachedRewrite) -> FileRewrite | None:
    text = _text_of(job.display, job.data)
    if isinstance(text, FileError):  # never stored: read as a miss
        return None
    header = diff_header(diff_path(job.path, job.display))
    patch = None if cached.hunks is None else header + cached.hunks
    error = None if cached.error is None else FileError(job.display, *cached.error)
    return FileRewrite(
        job.path,
        job.display,
        text.text,
        text.text if cached.new is None else cached.new,
        text.encoding,
        text.bom,
        cached.outcomes,
        error,
        patch,
        from_cache=True,
        read=read_digest(job.data),
    )


def _rewrite(job: Job, settings: Settings) -> FileRewrite:
    unsafe, diffs, target = settings
    # The rules load with the first file migrated (once a process: a forked worker has them).
    result = rewrite_data(
        job.path, job.display, job.data, load_ruleset(), unsafe=unsafe, target=target
    )
    patch = result.diff() if diffs and result.changed else result.patch
    return replace(result, patch=patch, read=read_digest(job.data))


def read_digest(data: bytes) -> bytes:
    """What `FileRewrite.read` holds of the bytes a rewrite read."""
    return cache_digest(data).digest()


def _stored(job: Job, result: FileRewrite, cache: Cache) -> FileRewrite:
    """`result`, put in the cache unless a bug made it (an internal error, a site refused) or
    it ran out of time (a slower moment's verdict)."""
    error = result.error
    if job.key is None or result.refused or (error is not None and error.kind in _FAILED):
        return result
    header = diff_header(diff_path(job.path, job.display))
    patch = result.patch
    hunks = patch[len(header) :] if patch is not None and patch.startswith(header) else None
    new = result.new if result.changed else None
    failed = None if error is None else tuple(error)[1:]
    cache.put(job.key, CachedRewrite(new, result.outcomes, hunks, failed))
    return result


def _rewrite_here(job: Job, settings: Settings, cache: Cache) -> FileRewrite:
    return _stored(job, _rewrite(job, settings), cache)


def _init_worker(settings: Settings, parent: int) -> None:
    global _WORKER
    die_with_parent(parent)  # a rewrite killed with SIGKILL leaves no worker behind
    _WORKER = settings
    collect_less(FEW_CYCLES)  # a worker's whole life is the run


def _rewrite_batch(batch: list[Job], settings: Settings) -> list[FileRewrite]:
    return [_rewrite(job, settings) for job in batch]


def _rewrite_in_worker(batch: list[Job]) -> list[FileRewrite]:
    assert _WORKER is not None
    return _rewrite_batch(batch, _WORKER)


def _rewrite_in_pool(
    planned: Iterator[Planned], settings: Settings, cache: Cache, *, jobs: int
) -> Iterator[FileRewrite]:
    """The planned files with their jobs done by a pool, in order. The pool starts with the
    first job: a re-run that the cache answers starts none."""
    methods = multiprocessing.get_all_start_methods()
    # fork hands the loaded rules to the workers as they are; elsewhere each worker loads them.
    context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    # Work in flight is bounded, so memory does not grow with the tree: a stretch is read when
    # fewer than `window` batches are waiting, and at most two stretches ahead.
    window = jobs * 4
    pool: ProcessPoolExecutor | None = None
    # Each stretch of files, with its jobs in batches: (places in the stretch, jobs, future).
    pending: deque[tuple[Planned, list[tuple[list[int], list[Job], Future[Any] | None]]]]
    pending = deque()
    in_flight = 0
    broken = False

    def submitted(batch: list[Job]) -> Future[list[FileRewrite]] | None:
        nonlocal pool, broken
        if broken:
            return None
        try:
            if pool is None:
                load_ruleset()  # before the fork, so each worker has them
                pool = ProcessPoolExecutor(
                    max_workers=jobs,
                    mp_context=context,
                    initializer=_init_worker,
                    initargs=(settings, os.getpid()),
                )
            return pool.submit(_rewrite_in_worker, batch)
        except BrokenProcessPool:
            broken = True
            return None

    def submit() -> None:
        nonlocal in_flight
        while in_flight < window and len(pending) < 2:  # (a stretch the cache answers: none)
            items = next(planned, None)
            if items is None:
                return
            places = [at for at, item in enumerate(items) if isinstance(item, Job)]
            batches = []
            for start in range(0, len(places), _BATCH):
                batch_places = places[start : start + _BATCH]
                batch: list[Job] = [items[at] for at in batch_places]  # type: ignore[misc]
                batches.append((batch_places, batch, submitted(batch)))
            in_flight += len(batches)
            pending.append((items, batches))

    try:
        submit()
        while pending:
            items, batches = pending.popleft()
            for batch_places, batch, future in batches:
                results = None
                if future is not None:
                    try:
                        results = future.result()
                    except Exception as exc:  # a worker died (killed, out of memory) or the
                        # results did not travel back: redo the files in this process
                        broken = broken or isinstance(exc, BrokenProcessPool)
                if results is None:
                    results = _rewrite_batch(batch, settings)
                for at, job, result in zip(batch_places, batch, results, strict=True):
                    items[at] = _stored(job, result, cache)
                in_flight -= 1
                submit()
            submit()  # a stretch without jobs made room too
            yield from items  # type: ignore[misc]
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


# A temporary file of `write_atomically`: `.neuron-migrate-PID-RANDOM.tmp`, PID its writer's.
_TMP_PREFIX = ".neuron-migrate-"
_TMP_SUFFIX = ".tmp"
# One without a writer's pid (an older build's) is stale once this old.
_STALE_S = 3600.0
_swept: set[str] = set()  # folders whose stale temporary files this process removed


def remove_stale_temporaries(directory: str) -> None:
    """Remove the temporary files `write_atomically` left in `directory` when its writer was
    killed (SIGKILL, power loss): those whose writer's pid is no longer a live process, as
    git does with a lock whose holder is gone. Another running writer's are left alone."""
    try:
        names = os.listdir(directory)
    except OSError:
        return
    now = time.time()
    for name in names:
        if not (name.startswith(_TMP_PREFIX) and name.endswith(_TMP_SUFFIX)):
            continue
        path = os.path.join(directory, name)
        writer = name[len(_TMP_PREFIX) :].split("-", 1)[0]
        try:
            if writer.isdigit() and "-" in name[len(_TMP_PREFIX) :]:
                if _running(int(writer)):
                    continue
            elif now - os.lstat(path).st_mtime < _STALE_S:
                continue
            os.unlink(path)
        except OSError:
            continue


def _running(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's: alive
        return True
    return True


def write_atomically(
    path: str, data: bytes, before_replace: Callable[[], None] | None = None
) -> None:
    """Replace `path` with `data` in one step: a reader sees the old file or the new one.
    `before_replace`: called once the new file is ready, just before it replaces the old one;
    what it raises leaves the old file."""
    directory = os.path.dirname(os.path.abspath(path))
    if directory not in _swept:
        _swept.add(directory)
        remove_stale_temporaries(directory)
    old = os.stat(path) if os.path.exists(path) else None
    prefix = f"{_TMP_PREFIX}{os.getpid()}-"
    fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=_TMP_SUFFIX, dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644 if old is None else old.st_mode & 0o7777)
        if old is not None and hasattr(os, "chown"):
            new = os.stat(tmp)
            if (new.st_uid, new.st_gid) != (old.st_uid, old.st_gid):
                # The replacement keeps the file's owner, or the file is not replaced.
                os.chown(tmp, old.st_uid, old.st_gid)
                os.chmod(tmp, old.st_mode & 0o7777)  # chown clears set-id bits
        if before_replace is not None:
            before_replace()
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def copy_tree(root: Path, out_dir: Path) -> None:
    """The whole tree (non-Python files too) copied to `out_dir`, before migrated files go in."""
    if root.is_file():
        out_dir.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root, out_dir / root.name)
        return
    ignore = shutil.ignore_patterns(".git", "__pycache__", ".neuron-migrate-cache", "*.pyc")
    shutil.copytree(root, out_dir, ignore=ignore, symlinks=True, dirs_exist_ok=True)


@dataclass
class RewriteSummary:
    files: int = 0
    changed: int = 0
    errors: list[FileError] = field(default_factory=list)
    rewritten: int = 0
    kept: int = 0  # sites that mean the same natively (a Neuron Runtime variable)
    marked: int = 0
    ambiguous: int = 0
    from_cache: int = 0  # files whose result an earlier run stored
    already_marked: int = 0  # of those marked or ambiguous, the ones an earlier run marked
    per_rule: Counter[tuple[str, str]] = field(default_factory=Counter)
    # Files that still import torch_xla where it is missing, with the sites that hold them.
    need_torch_xla: list[tuple[str, list[int], list[Outcome]]] = field(default_factory=list)
    # Sites left for a person that raise if reached where torch_xla is missing (a stand-in
    # binds the name they use), and those that stop the program at start there (goal: 0).
    raise_if_reached: int = 0
    stop_at_start: int = 0
    # Changed files `--apply` did not write, each with why (`rewrite.in_place`): an error.
    not_written: list[tuple[str, str]] = field(default_factory=list)
    # Sites whose rewrite made code that does not parse, left as they were: a bug, exit 2.
    refused: list[tuple[str, Outcome]] = field(default_factory=list)

    def add(self, result: FileRewrite) -> None:
        self.files += 1
        self.refused.extend((result.display, o) for o in result.refused)
        self.from_cache += result.from_cache
        if result.error is not None:
            self.errors.append(result.error)
        self.changed += result.changed
        statuses: Counter[str] = Counter()
        for outcome in result.outcomes:
            self.per_rule[(outcome.code, outcome.status)] += 1
            statuses[outcome.status] += 1
        self.rewritten += statuses["rewritten"]
        self.kept += statuses["kept"]
        self.marked += statuses["marked"]
        self.ambiguous += statuses["ambiguous"]
        self.already_marked += result.already_marked
        if result.torch_xla_imports:
            self.need_torch_xla.append((result.display, result.torch_xla_imports, result.held_by))
        self.raise_if_reached += len(result.raise_if_reached)
        self.stop_at_start += result.stop_at_start

    @property
    def conversion(self) -> float:
        """Share of torch_xla sites rewritten, out of all sites seen (100 when there were none)."""
        total = self.rewritten + self.kept + self.marked + self.ambiguous
        return 100.0 * (self.rewritten + self.kept) / total if total else 100.0

    @property
    def nothing_to_rewrite(self) -> bool:
        """A re-run over migrated code: no file changes, and every site left was marked
        before (its percentage would be about this run, which had nothing to do)."""
        left = self.marked + self.ambiguous
        return (
            not self.changed
            and not self.rewritten
            and not self.kept
            and left > 0
            and (self.already_marked == left)
        )

    def lines(self, verb: str) -> list[str]:
        """The summary a person reads (on stderr): counts, then the files that will not run
        without torch_xla and what holds each."""
        left = self.marked + self.ambiguous
        head = f"{self.changed} of {self.files} files {verb}; "
        if self.nothing_to_rewrite:
            uses = "use" if left == 1 else "uses"
            head += f"nothing left to rewrite: {left} torch_xla {uses} left for a person, marked"
        else:
            head += f"{self.rewritten} torch_xla uses rewritten, {left} left for a person "
            # a file it could not read (a notebook that does not parse, a binary .py) may hold
            # torch_xla too: no share of what was seen is "converted" for the whole tree
            head += (
                f"({self.conversion:.0f}% converted of the files read)"
                if self.errors
                else f"({self.conversion:.0f}% converted)"
            )
        count = sum(not e.partial for e in self.errors)
        if count:
            head += (
                f"; {count} {'file' if count == 1 else 'files'} could not be read and "
                f"{'was' if count == 1 else 'were'} not rewritten"
            )
        partly = len(self.errors) - count
        if partly:
            head += (
                f"; {partly} {'file' if partly == 1 else 'files'} read in part (the cells "
                "or statements that do not parse are left as they are)"
            )
        out = [head]
        for display, site in self.refused:
            out.append(
                f"{display}:{site.line}: {site.code} {site.api}: its rewrite made code that does "
                "not parse (a bug in neuron-migrate); the site is left as it was, marked"
            )
        if self.raise_if_reached or self.stop_at_start:
            out.append(
                f"where torch_xla is missing: {self.stop_at_start} of those left stop the "
                f"program at start; {self.raise_if_reached} raise NotImplementedError if reached, "
                "naming their rule"
            )
        if self.need_torch_xla:
            count = len(self.need_torch_xla)
            out.append(
                f"{count} {'file' if count == 1 else 'files'} will not run without torch_xla "
                "until the markers that hold their torch_xla imports are done:"
            )
            for display, imports, holders in self.need_torch_xla:
                held = ", ".join(f"{o.code} (line {o.line})" for o in holders)
                where = ", ".join(str(line) for line in imports)
                out.append(f"  {display}: import at line {where}; held by {held or 'the import'}")
        return out

    @property
    def failed(self) -> list[FileError]:
        """The files the codemod failed on, ran out of time on or would not parse (a statement
        too large): left as they were, though they may need a change (the run exits 2)."""
        return [e for e in self.errors if e.kind in _FAILED]

    def rules_json(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for (code, status), count in sorted(self.per_rule.items()):
            out.setdefault(code, {})[status] = count
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "files_changed": self.changed,
            "rewritten": self.rewritten,
            "kept": self.kept,
            "left_for_person": self.marked + self.ambiguous,
            "ambiguous": self.ambiguous,
            "conversion_percent": round(self.conversion, 1),
            "already_marked": self.already_marked,
            "need_torch_xla": [display for display, _, _ in self.need_torch_xla],
            "refused": [
                {"path": display, "line": o.line, "code": o.code, "api": o.api}
                for display, o in self.refused
            ],
            "stop_at_start": self.stop_at_start,
            "raise_if_reached": self.raise_if_reached,
            "from_cache": self.from_cache,
            "rules": self.rules_json(),
        }


def report_json(
    results: Iterable[FileRewrite], summary: RewriteSummary, target: str | None = None
) -> dict[str, Any]:
    """The `rewrite --format json` report; `target`: the torch-neuronx version migrated to."""
    from neuron_migrate.matrix.versions import resolve_version  # file names only

    return {
        "schema_version": SCHEMA_VERSION,
        "tool_version": __version__,
        "command": "rewrite",
        "target": resolve_version(target),
        "files": [r.to_json() for r in results if r.read_through and (r.outcomes or r.changed)],
        "errors": [e.to_json() for e in summary.errors],
        "summary": summary.to_json(),
    }
