"""Jupyter notebooks as Python source: split the code cells into one module, map lines back to
cells, and write changed cells back into the notebook without disturbing anything else.

The scan and the rewrite both see a notebook through `split_notebook`:

    nb = split_notebook(text)                 # text: the .ipynb file, decoded
    nb.source                                 # one Python module: every Python code cell
    nb.locate(line)                           # -> (cell, line in cell) or None

and the rewrite writes its result back with `join_notebook`:

    new_module = rewrite_python(nb.source)    # any source-to-source transform
    new_text = join_notebook(text, nb, new_module)   # the notebook, changed cells only

How the module is built, and why:

- Cells are joined in order, so an import in cell 1 resolves a call in cell 5, as in a kernel.
  Each cell starts with a sentinel statement, `__neuron_migrate_cell__(N)`, on a line of its own
  (N is the 1-based position of the cell in the notebook's `cells` list; markdown cells count).
  Statements, not comments: a transform that deletes a cell's first statement would take a
  comment with it. Lines a transform puts before the first sentinel (an added import) join the
  first code cell.
- IPython syntax does not parse as Python, so in a cell that does not parse, magic and shell
  lines (`%pip install x`, `!ls`, `x = !ls`, `obj?`, and their backslash continuations, which
  IPython joins into one command) become `__neuron_migrate_magic__(K)` at the command's
  indentation, and come back verbatim afterwards. A
  cell that parses is left exactly as it is (so `"!"` inside a string is never touched).
- A cell that does not parse even so (a real syntax error: IPython would refuse it too) is
  left out: a stand-in statement, `__neuron_migrate_unparsed__(name, ...)`, takes its place and
  names every identifier in it, so a rewrite of the other cells keeps the imports it uses.
  `unparsed` says which cells, and why; their lines locate nowhere, and `cell_sources` gives
  them back exactly as they were.
- A cell magic whose body is Python (`%%time`, `%%timeit`, `%%capture`, ...) keeps its body;
  other cell magics (`%%bash`, `%%writefile`, ...) and non-code cells are left out of the module.
  A `%%writefile NAME.py` cell is read apart, as the Python file it writes (`written_files`):
  the scan locates its findings in its cell, the rewrite rewrites it in place.
- `join_notebook` changes only the `source` of cells whose text changed, keeps each source's
  shape (a list of lines or one string), and dumps the JSON with the layout detected in the
  original (indent, key order, ASCII escapes, final newline), which reproduces files written by
  Jupyter and nbformat byte for byte. Outputs, metadata and execution counts are never touched.
"""

import ast
import json
import keyword
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from neuron_migrate.errors import NeuronMigrateError
from neuron_migrate.scan.findings import FileError

CELL_SENTINEL = "__neuron_migrate_cell__"
MAGIC_PLACEHOLDER = "__neuron_migrate_magic__"
UNPARSED_STAND_IN = "__neuron_migrate_unparsed__"

_SENTINEL_LINE = re.compile(rf"^{CELL_SENTINEL}\((\d+)\)\s*$")
_PLACEHOLDER_LINE = re.compile(rf"^(\s*){MAGIC_PLACEHOLDER}\((\d+)\)\s*$")
_STAND_IN_LINE = re.compile(rf"^{UNPARSED_STAND_IN}\(.*\)\s*$")
_NAME = re.compile(r"[^\W\d]\w*")
_MAGIC_LINE = re.compile(
    r"^\s*(?:[%!?]"  # %magic, %%magic, !shell, ?help
    r"|[\w.,\s\[\]()*]+=\s*[%!]"  # x = !ls, files = %sx ls
    r"|[\w.]+\?{1,2}\s*$)"  # obj? / obj??
)
# Cell magics whose body is Python code.
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug", "memit", "mprun"})


class NotebookError(NeuronMigrateError):
    """The file is not a notebook this tool can read (its message is one line)."""


@dataclass(frozen=True)
class CellSpan:
    cell: int  # 1-based position in the notebook's `cells` list
    first_line: int  # the cell's first line in the module (the line after its sentinel)
    line_count: int
    trailing_newline: bool  # the cell's source ended with a newline


@dataclass(frozen=True)
class SplitNotebook:
    source: str  # the Python module made of the code cells
    cells: tuple[CellSpan, ...]
    magics: tuple[str, ...] = ()  # original lines behind each __neuron_migrate_magic__(K)
    cell_magic_lines: dict[int, str] = field(default_factory=dict)  # cell -> its %%magic line
    language: str = "python"
    continued: frozenset[int] = frozenset()  # magics that continue a command's line: verbatim
    # A cell's indented first line (IPython drops that indentation): verbatim while it stays
    # first, else at its block's indentation (an import the rewrite added above it).
    leading: frozenset[int] = frozenset()
    # Cells that do not parse, each with why: (cell, line in the cell, Python's message). In
    # the module as a stand-in statement only.
    unparsed: tuple[tuple[int, int, str], ...] = ()

    def locate(self, line: int) -> tuple[int, int] | None:
        """(cell, line in cell) for a line of `source`; None for a sentinel line and the
        stand-in of a cell that does not parse."""
        for span in self.cells:
            if span.first_line <= line < span.first_line + span.line_count:
                if any(span.cell == unread[0] for unread in self.unparsed):
                    return None
                offset = 1 if span.cell in self.cell_magic_lines else 0  # the %%magic line
                return span.cell, line - span.first_line + 1 + offset
        return None


@dataclass(frozen=True)
class WrittenFile:
    """A `%%writefile NAME.py` cell: the Python file it writes, read as that file (not as part
    of the kernel's module: tutorials keep the very training scripts they run in such cells).
    Line N of `source` is line N + 1 of the cell (line 1 is the `%%writefile` line)."""

    cell: int  # 1-based position in the notebook's `cells` list
    name: str  # the file it writes
    source: str


_WRITEFILE = re.compile(r"^%%writefile(?:\s+-a|\s+--append)?\s+(\S+\.py)\s*$")


def written_files(text: str) -> list[WrittenFile]:
    """The Python files a notebook's `%%writefile` cells write, in cell order."""
    data = load_notebook(text)
    if notebook_language(data) != "python":
        return []
    out = []
    for number, cell in enumerate(data["cells"], 1):
        if cell.get("cell_type") != "code":
            continue
        first, _, rest = cell_text(cell).partition("\n")
        match = _WRITEFILE.match(first.strip())
        if match:
            out.append(WrittenFile(number, match.group(1).strip("'\""), rest))
    return out


def load_notebook(text: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise NotebookError(f"not a valid notebook: invalid JSON at line {exc.lineno}") from None
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise NotebookError("not a valid notebook: no 'cells' list")
    for i, cell in enumerate(data["cells"], 1):
        if not isinstance(cell, dict) or not isinstance(cell.get("source", ""), (str, list)):
            raise NotebookError(f"not a valid notebook: cell {i} is malformed")
    return data


def notebook_language(data: dict[str, Any]) -> str:
    meta = data.get("metadata") or {}
    language = (meta.get("language_info") or {}).get("name") or (meta.get("kernelspec") or {}).get(
        "language"
    )
    return str(language or "python").lower()


def cell_text(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def split_notebook(text: str) -> SplitNotebook:
    """The Python module behind a notebook's code cells (see the module docstring)."""
    data = load_notebook(text)
    language = notebook_language(data)
    parts: list[str] = []
    spans: list[CellSpan] = []
    magics: list[str] = []
    continued: set[int] = set()
    leading: set[int] = set()
    unparsed: list[tuple[int, int, str]] = []
    cell_magic_lines: dict[int, str] = {}
    line = 1
    for number, cell in enumerate(data["cells"], 1):
        if cell.get("cell_type") != "code":
            continue
        body = cell_text(cell)
        first, _, rest = body.partition("\n")
        if first.startswith("%%"):
            if first[2:].split(" ", 1)[0].strip() not in PYTHON_CELL_MAGICS:
                continue  # not Python: leave the cell alone
            cell_magic_lines[number] = first + "\n"
            body = rest
        error = _syntax_error(body) if body else None
        masked = body
        if error is not None:  # IPython syntax, or a real error
            masked = _mask_magics(body, magics, continued, leading)
            error = _syntax_error(masked) if masked != body else error
        parts.append(f"{CELL_SENTINEL}({number})\n")
        line += 1
        trailing = body.endswith("\n")
        if error is not None:
            at = (error.lineno or 1) + (1 if number in cell_magic_lines else 0)
            unparsed.append((number, at, error.msg))
            masked = _stand_in(body)
            trailing = True
        if masked:
            parts.append(masked if trailing else masked + "\n")
        count = masked.count("\n") + (0 if trailing or not masked else 1)
        spans.append(CellSpan(number, line, count, trailing))
        line += count
    return SplitNotebook(
        "".join(parts),
        tuple(spans),
        tuple(magics),
        cell_magic_lines,
        language,
        frozenset(continued),
        frozenset(leading),
        tuple(unparsed),
    )


def _syntax_error(body: str) -> SyntaxError | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)
            ast.parse(body)
    except SyntaxError as exc:
        return exc
    except ValueError as exc:  # a NUL byte
        return SyntaxError(str(exc))
    return None


def _stand_in(body: str) -> str:
    """The statement that stands for a cell that does not parse: a call naming each identifier
    in it (strings and comments included: a name too many only keeps an import)."""
    names = dict.fromkeys(n for n in _NAME.findall(body) if not keyword.iskeyword(n))
    names.pop(UNPARSED_STAND_IN, None)
    return f"{UNPARSED_STAND_IN}({', '.join(names)})\n"


def _mask_magics(body: str, magics: list[str], continued: set[int], leading: set[int]) -> str:
    out = []
    continuing = False
    indent = ""
    code = False  # a line of code came before: a command's indentation is the block's
    for line in body.splitlines(keepends=True):
        if continuing or _MAGIC_LINE.match(line):
            if continuing:
                # IPython joins `!pip install \` and the lines after it into one command: a
                # continuation line keeps the command's indentation (its own would be an
                # unexpected indent) and comes back exactly as it was.
                continued.add(len(magics))
            elif code:
                indent = line[: len(line) - len(line.lstrip())]
            else:  # the cell's first line: IPython drops its indentation (`  !pip install`)
                indent = ""
                if line[:1] in " \t":
                    leading.add(len(magics))
            ending = "\n" if line.endswith("\n") else ""
            out.append(f"{indent}{MAGIC_PLACEHOLDER}({len(magics)}){ending}")
            magics.append(line.rstrip("\n"))
            continuing = line.rstrip("\r\n").endswith("\\")
        else:
            out.append(line)
            code = code or (bool(line.strip()) and not line.lstrip().startswith("#"))
    return "".join(out)


def cell_sources(split: SplitNotebook, module: str) -> dict[int, str]:
    """Each cell's source, taken back out of a (possibly rewritten) module: magics restored,
    the `%%magic` line put back, each cell's final newline as it was. A cell that does not
    parse is not in it: it stays as it is (a marker a rewrite put on its stand-in is dropped;
    lines a rewrite added before the first sentinel join the first cell that parses)."""
    wanted = {span.cell: span for span in split.cells}
    unread = {unparsed[0] for unparsed in split.unparsed}
    out: dict[int, list[str]] = {}
    stand_ins: dict[int, list[str]] = {}
    current: int | None = None
    preamble: list[str] = []
    code = False  # the cell being taken out has a line that is not blank (the preamble's too)
    for line in module.splitlines(keepends=True):
        sentinel = _SENTINEL_LINE.match(line)
        if sentinel:
            current = int(sentinel.group(1))
            if current not in wanted:
                raise NotebookError(f"cell sentinel {current} does not belong to this notebook")
            if current in unread:
                stand_ins[current] = []
                continue
            code = code and not out
            out[current] = preamble if not out else []
            preamble = []
            continue
        if current in stand_ins:
            stand_ins[current].append(line)
            continue
        (out[current] if current is not None else preamble).append(
            _restore(line, split, first=not code)
        )
        code = code or bool(line.strip())
    if any(line.strip() for line in preamble):  # no cell parses: none can take them
        raise NotebookError("the rewrite added lines to a notebook no cell of which parses")
    missing = sorted(set(wanted) - set(out) - set(stand_ins))
    if missing:
        raise NotebookError(f"the rewritten module lost the start of cell {missing[0]}")
    for number, lines in stand_ins.items():
        if any(_STAND_IN_LINE.match(x) is None and x.strip()[:1] not in ("", "#") for x in lines):
            raise NotebookError(f"the rewrite put code into cell {number}, which does not parse")
    result = {}
    for number, lines in out.items():
        text = "".join(lines)
        if not wanted[number].trailing_newline and text.endswith("\n"):
            text = text[:-1]
        result[number] = split.cell_magic_lines.get(number, "") + text
    return result


def _restore(line: str, split: SplitNotebook, first: bool = False) -> str:
    match = _PLACEHOLDER_LINE.match(line)
    if match is None:
        return line
    number = int(match.group(2))
    original = split.magics[number]
    ending = "\n" if line.endswith("\n") else ""
    if number in split.continued or (first and number in split.leading):
        return original + ending
    return match.group(1) + original.lstrip() + ending


def join_notebook(text: str, split: SplitNotebook, module: str) -> str:
    """The notebook `text` with each code cell's source replaced by its part of `module`.

    Returns `text` itself when no cell changed."""
    data = load_notebook(text)
    changed = False
    for number, source in cell_sources(split, module).items():
        cell = data["cells"][number - 1]
        if cell_text(cell) == source:
            continue
        changed = True
        old = cell.get("source", "")
        cell["source"] = source.splitlines(keepends=True) if isinstance(old, list) else source
    return dump_like(data, text) if changed else text


def dump_like(data: Any, original: str) -> str:
    """JSON text for `data` in the layout of `original` (indent, escapes, final newline)."""
    second = original.split("\n", 2)[1] if original.count("\n") >= 2 else ""
    indent: int | str | None = None
    if original.lstrip().startswith("{\n") or original.lstrip().startswith("{\r\n"):
        stripped = second.lstrip(" \t")
        indent = second[: len(second) - len(stripped)] or 0
        if isinstance(indent, str) and set(indent) == {" "}:
            indent = len(indent)
    ascii_only = original.isascii() and "\\u" in original
    separators = (",", ": ") if indent is not None else _inline_separators(original)
    text = json.dumps(data, indent=indent, ensure_ascii=ascii_only, separators=separators)
    return text + ("\n" if original.endswith("\n") else "")


def _inline_separators(original: str) -> tuple[str, str]:
    return (", ", ": ") if re.search(r'", "|": ', original) else (",", ":")


def transform_notebook(
    text: str, transform: Callable[[str], str], split: SplitNotebook | None = None
) -> str:
    """Apply a source-to-source `transform` to a notebook's Python code cells; returns the new
    notebook text (`text` itself when nothing changed or it is not a Python notebook).

    For the rewrite: `transform_notebook(text, lambda module: rewrite_source(module).new)`."""
    split = split_notebook(text) if split is None else split
    if split.language != "python":
        return text
    new = join_notebook(text, split, transform(split.source)) if split.cells else text
    written = written_files(new)
    if not written:
        return new
    data = load_notebook(new)
    changed = False
    for file in written:
        if _syntax_error(file.source) is not None:  # left as it is (`unread_cells`)
            continue
        rewritten = transform(file.source)
        if rewritten == file.source:
            continue
        changed = True
        cell = data["cells"][file.cell - 1]
        first = cell_text(cell).partition("\n")[0]
        source = f"{first}\n{rewritten}"
        old = cell.get("source", "")
        cell["source"] = source.splitlines(keepends=True) if isinstance(old, list) else source
    return dump_like(data, text) if changed else new


class Unread(NamedTuple):
    """A cell that could not be read, and why ("line 2: invalid syntax", its line in the cell)."""

    cell: int
    why: str
    kind: str = "syntax"


def unread_cells(text: str, split: SplitNotebook) -> tuple[list[Unread], bool]:
    """The cells of a notebook (`text`, split as `split`) that do not parse, `%%writefile`
    cells included, and whether any other cell was read."""
    unread = [Unread(cell, f"line {line}: {why}") for cell, line, why in split.unparsed]
    read = len(split.unparsed) < len(split.cells)
    for file in written_files(text):
        error = _syntax_error(file.source)
        if error is None:
            read = True
        else:  # its lines are the cell's after the %%writefile line
            unread.append(Unread(file.cell, f"line {(error.lineno or 1) + 1}: {error.msg}"))
    return unread, read


def cells_error(display: str, unread: list[Unread], partial: bool) -> FileError:
    """One error for a notebook's cells that could not be read: the first three named, in
    order; `partial`: the other cells were read."""
    unread = sorted(unread)
    first = unread[0]
    named = [f"in cell {u.cell}, {u.why}" for u in unread[:3]]
    more = len(unread) - len(named)
    reason = "; ".join(named) + (f"; and {more} more cell{'s' if more > 1 else ''}" if more else "")
    prefix = "syntax error " if first.kind == "syntax" else ""
    return FileError(display, prefix + reason, first.kind, cell=first.cell, partial=partial)
