"""`rewrite` over a tree: read each file, migrate it, then show a diff, write it in place
atomically, or write a migrated copy of the tree. One file failing never stops the run."""

from __future__ import annotations

import difflib
import multiprocessing
import os
import shutil
import tempfile
import traceback
from collections import Counter, deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from neuron_migrate import __version__
from neuron_migrate.codemod.context import Outcome
from neuron_migrate.codemod.engine import RewriteFailed, rewrite_source
from neuron_migrate.discover import NOTEBOOK_SUFFIX, discover, may_hold_findings
from neuron_migrate.findings import FileError
from neuron_migrate.gc_tuning import FEW_CYCLES, collect_less, collecting_less
from neuron_migrate.ruleset import RuleSet, load_ruleset
from neuron_migrate.source import decode, read_bytes, syntax_error

SCHEMA_VERSION = 1


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

    @property
    def changed(self) -> bool:
        return self.error is None and self.new != self.old

    def count(self, status: str) -> int:
        return sum(1 for o in self.outcomes if o.status == status)

    def diff(self) -> str:
        if self.patch is not None:
            return self.patch
        return "".join(
            difflib.unified_diff(
                self.old.splitlines(keepends=True),
                self.new.splitlines(keepends=True),
                f"a/{self.display}",
                f"b/{self.display}",
            )
        )

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
            "sites": [
                {"code": o.code, "line": o.line, "api": o.api, "status": o.status}
                for o in self.outcomes
            ],
        }


def rewrite_file(path: str, display: str, ruleset: RuleSet, *, unsafe: bool) -> FileRewrite:
    """Migrate one file; every failure comes back as a FileError, never as an exception."""
    data = read_bytes(path, display)
    if isinstance(data, FileError):
        return FileRewrite(path, display, error=data)
    if not may_hold_findings(data):
        return FileRewrite(path, display)
    if display.endswith(NOTEBOOK_SUFFIX):
        return _rewrite_notebook(path, display, data, ruleset, unsafe=unsafe)
    source = decode(data, display)
    if isinstance(source, FileError):
        return FileRewrite(path, display, error=source)
    try:
        result = rewrite_source(source.text, ruleset, unsafe=unsafe)
    except SyntaxError as exc:
        return FileRewrite(
            path, display, source.text, source.text, error=syntax_error(exc, display)
        )
    except RewriteFailed as exc:
        return FileRewrite(
            path, display, source.text, source.text, error=FileError(display, str(exc), "internal")
        )
    except Exception as exc:  # a bug in a transform must not end the run over the tree
        last = traceback.extract_tb(exc.__traceback__)[-1]
        where = f"{Path(last.filename).name}:{last.lineno}"
        reason = f"internal error: {type(exc).__name__}: {exc} ({where})"
        return FileRewrite(
            path, display, source.text, source.text, error=FileError(display, reason, "internal")
        )
    return FileRewrite(
        path,
        display,
        result.old,
        result.new,
        encoding=source.encoding if source.encoding != "utf-8-sig" else "utf-8",
        bom=source.data.startswith(b"\xef\xbb\xbf"),
        outcomes=result.outcomes,
    )


def _rewrite_notebook(
    path: str, display: str, data: bytes, ruleset: RuleSet, *, unsafe: bool
) -> FileRewrite:
    """A notebook's code cells migrated as one module (`neuron_migrate.notebook`): magics,
    outputs and the JSON layout are kept. Outcome lines are lines of that module."""
    from neuron_migrate.notebook import NotebookError, transform_notebook

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return FileRewrite(
            path,
            display,
            error=FileError(display, f"not valid utf-8 at byte {exc.start}", "encoding"),
        )
    outcomes: list[Outcome] = []

    def migrate(module: str) -> str:
        result = rewrite_source(module, ruleset, unsafe=unsafe)
        outcomes.extend(result.outcomes)
        return result.new

    try:
        new = transform_notebook(text, migrate)
    except NotebookError as exc:
        return FileRewrite(path, display, text, text, error=FileError(display, str(exc), "syntax"))
    except SyntaxError as exc:
        return FileRewrite(path, display, text, text, error=syntax_error(exc, display))
    except RewriteFailed as exc:
        return FileRewrite(
            path, display, text, text, error=FileError(display, str(exc), "internal")
        )
    return FileRewrite(path, display, text, new, outcomes=tuple(outcomes))


def rewrite_tree(
    root: Path,
    *,
    unsafe: bool = False,
    exclude: tuple[str, ...] = (),
    jobs: int = 1,
    diffs: bool = False,
) -> Iterator[FileRewrite]:
    """Every discovered file migrated, in discovery order. With `jobs` > 1 the files are
    rewritten in a pool of forked worker processes; the results still come in input order.
    `diffs`: each changed file's diff is made where it is rewritten (`FileRewrite.patch`)."""
    ruleset = load_ruleset()
    sources = [(s.path, s.display) for s in discover(root, exclude, notebooks=True)]
    if jobs <= 1 or len(sources) <= 1:
        with collecting_less(FEW_CYCLES):
            for path, display in sources:
                yield _rewrite(path, display, ruleset, unsafe, diffs)
        return
    yield from _rewrite_in_pool(sources, (ruleset, unsafe, diffs), jobs=min(jobs, len(sources)))


def _rewrite(path: str, display: str, ruleset: RuleSet, unsafe: bool, diffs: bool) -> FileRewrite:
    result = rewrite_file(path, display, ruleset, unsafe=unsafe)
    return replace(result, patch=result.diff()) if diffs and result.changed else result


Settings = tuple[RuleSet, bool, bool]  # the rules, unsafe fixes, diffs
Job = tuple[str, str]  # path, display

# What a forked worker rewrites with: set by the pool initializer (inherited, never pickled).
_WORKER: Settings | None = None
# Files per task: a task's round trip costs about as much as rewriting a small file.
_BATCH = 8


def _init_worker(settings: Settings) -> None:
    global _WORKER
    _WORKER = settings
    collect_less(FEW_CYCLES)  # a worker's whole life is the run


def _rewrite_batch(batch: list[Job], settings: Settings) -> list[FileRewrite]:
    ruleset, unsafe, diffs = settings
    return [_rewrite(path, display, ruleset, unsafe, diffs) for path, display in batch]


def _rewrite_in_worker(batch: list[Job]) -> list[FileRewrite]:
    assert _WORKER is not None
    return _rewrite_batch(batch, _WORKER)


def _rewrite_in_pool(sources: list[Job], settings: Settings, *, jobs: int) -> Iterator[FileRewrite]:
    methods = multiprocessing.get_all_start_methods()
    # fork hands the loaded rules to the workers as they are; elsewhere they are pickled once
    # per worker through the initializer.
    context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    window = jobs * 4  # bounded work in flight, so memory does not grow with the tree
    pool = ProcessPoolExecutor(
        max_workers=jobs, mp_context=context, initializer=_init_worker, initargs=(settings,)
    )
    pending: deque[tuple[list[Job], Future[list[FileRewrite]] | None]] = deque()
    batches = (sources[i : i + _BATCH] for i in range(0, len(sources), _BATCH))
    broken = False

    def submit() -> None:
        nonlocal broken
        while len(pending) < window:
            batch = next(batches, None)
            if batch is None:
                return
            future = None
            if not broken:
                try:
                    future = pool.submit(_rewrite_in_worker, batch)
                except BrokenProcessPool:
                    broken = True
            pending.append((batch, future))

    try:
        submit()
        while pending:
            batch, future = pending.popleft()
            if future is None:
                results = _rewrite_batch(batch, settings)
            else:
                try:
                    results = future.result()
                except Exception as exc:  # a worker died (killed, out of memory) or the
                    # results did not travel back: redo the files in this process
                    broken = broken or isinstance(exc, BrokenProcessPool)
                    results = _rewrite_batch(batch, settings)
            yield from results
            submit()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def write_atomically(path: str, data: bytes) -> None:
    """Replace `path` with `data` in one step: a reader sees the old file or the new one."""
    directory = os.path.dirname(os.path.abspath(path))
    mode = os.stat(path).st_mode & 0o7777 if os.path.exists(path) else 0o644
    fd, tmp = tempfile.mkstemp(prefix=".neuron-migrate-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
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
    per_rule: Counter[tuple[str, str]] = field(default_factory=Counter)

    def add(self, result: FileRewrite) -> None:
        self.files += 1
        if result.error is not None:
            self.errors.append(result.error)
        self.changed += result.changed
        for outcome in result.outcomes:
            self.per_rule[(outcome.code, outcome.status)] += 1
        self.rewritten += result.count("rewritten")
        self.kept += result.count("kept")
        self.marked += result.count("marked")
        self.ambiguous += result.count("ambiguous")

    @property
    def conversion(self) -> float:
        """Share of torch_xla sites rewritten, out of all sites seen (100 when there were none)."""
        total = self.rewritten + self.kept + self.marked + self.ambiguous
        return 100.0 * (self.rewritten + self.kept) / total if total else 100.0

    @property
    def internal_errors(self) -> list[FileError]:
        return [e for e in self.errors if e.kind == "internal"]

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
            "rules": self.rules_json(),
        }


def report_json(results: Iterable[FileRewrite], summary: RewriteSummary) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "tool_version": __version__,
        "command": "rewrite",
        "files": [r.to_json() for r in results if r.error is None and (r.outcomes or r.changed)],
        "errors": [e.to_json() for e in summary.errors],
        "summary": summary.to_json(),
    }
