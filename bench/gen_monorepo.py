"""Generate a deterministic torch_xla monorepo for the scan benchmark.

    python bench/gen_monorepo.py OUT_DIR [--files 5000] [--seed 7] [--check]

The tree is built from the fixture projects (`fixtures/projects/*/`) and the single-file fixtures
(`fixtures/analyze/*.py`, `fixtures/rewrite/*.in.py`), varied so that no two files are alike:
modules are renamed (and the imports between them follow), torch_xla module aliases change
(`import torch_xla.core.xla_model as <alias>` or `from torch_xla.core import xla_model as
<alias>`), function-local, try/except and availability-guarded imports are added, plain-Python
filler files that the prefilter skips make up a large share, and a few files are large (thousands
of lines). The same seed and size always give the same bytes.
"""

from __future__ import annotations

import argparse
import ast
import json
import random
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "fixtures"
MARKER = ".neuron-migrate-bench-corpus"

# Share of generated files by kind; the rest of each package folder is an empty __init__.py.
WEIGHTS = {"project": 0.30, "single": 0.22, "filler": 0.45, "large": 0.03}
LARGE_CHUNKS = (25, 90)  # a large file concatenates this many varied templates

_ALIAS_POOL = {
    "torch_xla.core.xla_model": ["xm", "xla_model", "xmod", "core_xm", "XM", "_xm", "xmdl"],
    "torch_xla.runtime": ["xr", "xla_runtime", "rt", "_xr", "xrt_mod"],
    "torch_xla.distributed.parallel_loader": ["pl", "ploader", "par_loader", "_pl"],
    "torch_xla.distributed.xla_multiprocessing": ["xmp", "xla_mp", "mp_xla", "_xmp"],
    "torch_xla.debug.metrics": ["met", "metrics", "xmet", "_met"],
}
_IMPORT_AS = re.compile(
    r"^(?P<indent>[ \t]*)import (?P<module>torch_xla[\w.]*) as (?P<alias>\w+)[ \t]*$", re.M
)

# Filler vocabulary: none of these may contain a prefilter trigger (torch, xla, XLA, PJRT_,
# NEURON, TPU_, XRT_), so the prefilter skips every filler file.
_WORDS = (
    "account",
    "batch",
    "cache",
    "client",
    "config",
    "count",
    "cursor",
    "delta",
    "entry",
    "event",
    "field",
    "filter",
    "frame",
    "group",
    "handle",
    "index",
    "item",
    "key",
    "label",
    "limit",
    "line",
    "map",
    "marker",
    "node",
    "offset",
    "order",
    "owner",
    "page",
    "parser",
    "path",
    "queue",
    "range",
    "record",
    "region",
    "report",
    "request",
    "result",
    "row",
    "schema",
    "score",
    "segment",
    "session",
    "shard",
    "signal",
    "slot",
    "source",
    "state",
    "status",
    "store",
    "stream",
    "table",
    "tag",
    "task",
    "token",
    "total",
    "unit",
    "user",
    "value",
    "vector",
    "window",
    "worker",
    "zone",
)


@dataclass(frozen=True)
class Template:
    name: str
    text: str


@dataclass(frozen=True)
class Project:
    name: str
    files: tuple[Template, ...]


def _parses(text: str) -> bool:
    try:
        ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    return True


def load_templates(fixtures: Path = FIXTURES) -> tuple[list[Project], list[Template]]:
    """The fixture projects and single-file fixtures that parse, in a stable order."""
    projects = []
    for folder in sorted(p for p in (fixtures / "projects").glob("*") if p.is_dir()):
        files = tuple(
            Template(f.stem, f.read_text(encoding="utf-8")) for f in sorted(folder.glob("*.py"))
        )
        files = tuple(t for t in files if _parses(t.text))
        if files:
            projects.append(Project(folder.name, files))
    singles = []
    for pattern in ("analyze/*.py", "rewrite/*.in.py"):
        for path in sorted(fixtures.glob(pattern)):
            text = path.read_text(encoding="utf-8")
            if _parses(text):
                singles.append(Template(path.name.split(".")[0], text))
    if not projects and not singles:
        raise SystemExit(f"no fixture templates found under {fixtures}")
    return projects, singles


class Varier:
    """Applies seeded, semantics-keeping variations to a template's text."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.counter = 0

    def next_id(self) -> int:
        self.counter += 1
        return self.counter

    def aliases(self, text: str) -> str:
        """Rename each `import torch_xla.x as a` alias (everywhere it is used) and vary the form."""
        for match in list(_IMPORT_AS.finditer(text)):
            module, old = match["module"], match["alias"]
            pool = [a for a in _ALIAS_POOL.get(module, []) if a != old]
            new = self.rng.choice(pool) if pool else f"{old}_{self.next_id()}"
            if re.search(rf"\b{re.escape(new)}\b", text):
                continue  # the name is taken in this file: keep the original alias
            text = re.sub(rf"\b{re.escape(old)}\b", new, text)
            if "." in module and self.rng.random() < 0.4:
                parent, _, leaf = module.rpartition(".")
                text = text.replace(
                    f"{match['indent']}import {module} as {new}\n",
                    f"{match['indent']}from {parent} import {leaf} as {new}\n",
                    1,
                )
        return text

    def extras(self, text: str) -> str:
        """Append function-local, try/except or availability-guarded torch_xla uses."""
        parts = [text.rstrip("\n"), ""]
        for _ in range(self.rng.randint(0, 2)):
            uid = self.next_id()
            alias = self.rng.choice(_ALIAS_POOL["torch_xla.core.xla_model"]) + f"_{uid}"
            kind = self.rng.choice(("local", "try", "guard", "device"))
            if kind == "local":
                parts.append(
                    f"\n\ndef _sync_{uid}(step):\n"
                    f"    import torch_xla.core.xla_model as {alias}\n\n"
                    f"    if step % {self.rng.randint(2, 50)} == 0:\n"
                    f"        {alias}.mark_step()\n"
                    f"    return {alias}.xla_device()\n"
                )
            elif kind == "try":
                parts.append(
                    f"\n\ntry:\n    import torch_xla.runtime as {alias}\n"
                    f"except ImportError:\n    {alias} = None\n\n\n"
                    f"def _world_{uid}():\n"
                    f"    return {alias}.world_size() if {alias} is not None else 1\n"
                )
            elif kind == "guard":
                parts.append(
                    f"\n\nimport os as _os_{uid}\n\n"
                    f"HAS_XLA_{uid} = _os_{uid}.environ.get('PJRT_DEVICE') is not None\n"
                    f"if HAS_XLA_{uid}:\n"
                    f"    import torch_xla.core.xla_model as {alias}\n\n\n"
                    f"def _ordinal_{uid}():\n"
                    f"    return {alias}.get_ordinal() if HAS_XLA_{uid} else 0\n"
                )
            else:
                parts.append(f"\n\nDEVICE_{uid} = 'xla'\n")
        return "\n".join(parts).rstrip("\n") + "\n"

    def header(self, origin: str) -> str:
        return f"# generated from {origin} (variant {self.next_id()})\n"

    def vary(self, template: Template, modules: dict[str, str] | None = None) -> str:
        text = template.text
        for old, new in (modules or {}).items():
            # `from data import x`, `import data`, `data.x`: the sibling module was renamed.
            text = re.sub(rf"(?m)^(\s*)from {old} import", rf"\1from {new} import", text)
            text = re.sub(rf"(?m)^(\s*)import {old}\b", rf"\1import {new}", text)
        text = self.aliases(text)
        if "torch_xla" in text or self.rng.random() < 0.3:
            text = self.extras(text)
        # A comment may precede `from __future__` imports, so the header keeps the file valid.
        return self.header(template.name) + text


def filler(rng: random.Random, uid: int) -> str:
    """A plain-Python module that mentions none of the prefilter's triggers."""
    topic = f"{rng.choice(_WORDS)} {rng.choice(_WORDS)}"
    lines = [f'"""Helpers for the {topic} service ({uid})."""', ""]
    lines += ["import json", "import re", "from dataclasses import dataclass", ""]
    for index in range(rng.randint(2, 14)):
        a, b, c = rng.sample(_WORDS, 3)
        if rng.random() < 0.3:
            lines += [
                "",
                "@dataclass",
                f"class {a.title()}{b.title()}{index}:",
                f"    {a}: int = 0",
                f"    {b}: str = ''",
                "",
                f"    def {c}_total(self, extra: int = {rng.randint(0, 9)}) -> int:",
                f"        return self.{a} + len(self.{b}) + extra",
                "",
            ]
        else:
            lines += [
                "",
                f"def {a}_{b}_{index}({c}s, limit={rng.randint(1, 100)}):",
                "    out = {}",
                f"    for i, {c} in enumerate({c}s):",
                "        if i >= limit:",
                "            break",
                f"        key = re.sub(r'[^a-z]+', '_', str({c}).lower())",
                f"        out[key] = out.get(key, 0) + {rng.randint(1, 5)}",
                "    return json.dumps(out, sort_keys=True)",
                "",
            ]
    return "\n".join(lines) + "\n"


def large(varier: Varier, rng: random.Random, templates: list[Template]) -> str:
    """Many varied templates in one module (later `from __future__` lines dropped)."""
    chunks = []
    for index in range(rng.randint(*LARGE_CHUNKS)):
        text = varier.vary(rng.choice(templates))
        if index:
            text = re.sub(r"(?m)^from __future__ import [^\n]*\n", "", text)
        chunks.append(text)
    return "\n\n".join(chunks)


def generate(out: Path, files: int, seed: int = 7, fixtures: Path = FIXTURES) -> dict[str, int]:
    """Write about `files` .py files (at least that many) under `out`; return counts by kind."""
    if out.exists():
        if any(out.iterdir()) and not (out / MARKER).exists():
            raise SystemExit(f"{out} is not empty and is not a generated corpus; not touching it")
        shutil.rmtree(out)
    out.mkdir(parents=True)
    (out / MARKER).write_text(json.dumps({"files": files, "seed": seed}) + "\n")
    rng = random.Random(seed)
    varier = Varier(rng)
    projects, singles = load_templates(fixtures)
    all_templates = [t for p in projects for t in p.files] + singles
    counts = {"project": 0, "single": 0, "filler": 0, "large": 0, "init": 0}
    kinds = list(WEIGHTS)
    weights = [WEIGHTS[k] if (k != "project" or projects) else 0 for k in kinds]
    written = 0
    package: Path | None = None
    in_package = 0
    while written < files:
        if package is None or in_package >= rng.randint(8, 30):
            team = rng.choice(_WORDS)
            package = out / f"{team}_{rng.choice(_WORDS)}" / f"pkg_{varier.next_id()}"
            package.mkdir(parents=True, exist_ok=True)
            (package / "__init__.py").write_text("")
            counts["init"] += 1
            written += 1
            in_package = 0
        kind = rng.choices(kinds, weights)[0]
        if kind == "project":
            project = rng.choice(projects)
            uid = varier.next_id()
            folder = package / f"{project.name}_{uid}"
            folder.mkdir()
            renames = {t.name: f"{t.name}_{uid}" for t in project.files}
            for template in project.files:
                text = varier.vary(template, renames)
                (folder / f"{renames[template.name]}.py").write_text(text, encoding="utf-8")
            written += len(project.files)
        elif kind == "single":
            template = rng.choice(singles or all_templates)
            name = f"{template.name}_{varier.next_id()}.py"
            (package / name).write_text(varier.vary(template), encoding="utf-8")
            written += 1
        elif kind == "filler":
            uid = varier.next_id()
            name = f"{rng.choice(_WORDS)}_{rng.choice(_WORDS)}_{uid}.py"
            (package / name).write_text(filler(rng, uid), encoding="utf-8")
            written += 1
        else:
            name = f"big_{rng.choice(_WORDS)}_{varier.next_id()}.py"
            (package / name).write_text(large(varier, rng, all_templates), encoding="utf-8")
            written += 1
        counts[kind] += 1
        in_package += 1
    return counts


def check(out: Path) -> list[str]:
    """Generated files that do not parse (should be none)."""
    return [str(p) for p in sorted(out.rglob("*.py")) if not _parses(p.read_text(encoding="utf-8"))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "out",
        nargs="?",
        type=Path,
        default=Path(tempfile.gettempdir()) / "neuron-migrate-bench" / "monorepo",
        help="output folder (replaced if it holds an earlier generated corpus)",
    )
    parser.add_argument("--files", type=int, default=5000, help="number of .py files (minimum)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--check", action="store_true", help="verify every file parses")
    args = parser.parse_args(argv)
    counts = generate(args.out, args.files, args.seed)
    total = sum(1 for _ in args.out.rglob("*.py"))
    print(f"{args.out}: {total} .py files ({', '.join(f'{k} {v}' for k, v in counts.items())})")
    if args.check:
        bad = check(args.out)
        if bad:
            print("do not parse:\n  " + "\n  ".join(bad), file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
