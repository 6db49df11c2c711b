"""The benchmark's corpora: where they come from, and the file lists each measured row reads.

(a) the installed torch package's own Python sources, copied (so that the one-changed-file row
    can edit a file without touching site-packages);
(b) a generated torch_xla monorepo (`gen_monorepo.py`), at the requested size and at twice it
    for the memory-growth row.

Each corpus gets `files.txt` (every file `scan` reads, in its order) and a folder holding only
the files that contain `torch_xla`, with its own `xla-files.txt`: the rewrite rows' input.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import gen_monorepo

from neuron_migrate.project.discover import discover

STAMP = ".bench-corpus.json"


@dataclass
class Corpus:
    key: str  # "a", "b", "b2"
    title: str
    root: Path
    files: list[Path]
    lines: int
    file_list: Path
    xla_root: Path
    xla_files: list[Path]
    xla_lines: int
    xla_file_list: Path

    def describe(self) -> str:
        return (
            f"{self.title}: {len(self.files):,} files, {self.lines:,} lines; "
            f"{len(self.xla_files):,} files hold torch_xla ({self.xla_lines:,} lines)"
        )


def torch_source_dir() -> Path | None:
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _stamp_matches(folder: Path, stamp: dict[str, object]) -> bool:
    try:
        return json.loads((folder / STAMP).read_text()) == stamp
    except (OSError, ValueError):
        return False


def copy_torch_sources(workdir: Path, limit: int) -> Path:
    """Copy torch's .py files (the first `limit` in scan order, 0: all) into the workdir."""
    source = torch_source_dir()
    if source is None:
        raise SystemExit("corpus (a) needs torch installed in this environment")
    out = workdir / ("torch-src" if not limit else f"torch-src-{limit}")
    stamp = {"source": str(source), "limit": limit}
    if _stamp_matches(out, stamp):
        return out
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    for index, item in enumerate(discover(source)):
        if limit and index >= limit:
            break
        target = out / item.display
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(item.path, target)
    (out / STAMP).write_text(json.dumps(stamp))
    return out


def generated_monorepo(workdir: Path, files: int, seed: int) -> Path:
    out = workdir / f"monorepo-{files}"
    marker = out / gen_monorepo.MARKER
    try:
        if json.loads(marker.read_text()) == {"files": files, "seed": seed}:
            return out
    except (OSError, ValueError):
        pass
    gen_monorepo.generate(out, files, seed)
    return out


def _lines(paths: list[Path]) -> int:
    return sum(p.read_bytes().count(b"\n") for p in paths)


def index(key: str, title: str, root: Path, workdir: Path) -> Corpus:
    """List the corpus as scan sees it and build its torch_xla-only mirror."""
    files = [Path(item.path) for item in discover(root)]
    lists = workdir / "lists"
    lists.mkdir(parents=True, exist_ok=True)
    file_list = lists / f"{key}-files.txt"
    file_list.write_text("".join(f"{p}\n" for p in files))
    xla_root = workdir / f"{root.name}-xla"
    shutil.rmtree(xla_root, ignore_errors=True)
    xla_files = []
    for path in files:
        if b"torch_xla" in path.read_bytes():
            target = xla_root / path.relative_to(root)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
            xla_files.append(target)
    xla_root.mkdir(parents=True, exist_ok=True)
    xla_file_list = lists / f"{key}-xla-files.txt"
    xla_file_list.write_text("".join(f"{p}\n" for p in xla_files))
    return Corpus(
        key,
        title,
        root,
        files,
        _lines(files),
        file_list,
        xla_root,
        xla_files,
        _lines(xla_files),
        xla_file_list,
    )


def file_to_change(files: list[Path]) -> Path:
    """A median-sized file that holds torch_xla (or any file): the one-changed-file row's edit."""
    candidates = [p for p in files if b"torch_xla" in p.read_bytes()] or files
    by_size = sorted(candidates, key=lambda p: (p.stat().st_size, str(p)))
    return by_size[len(by_size) // 2]
