"""Read the official per-API compatibility table of torch-neuronx (its torch_api_compatibility.md).

The released format, as the 2.33 supported-operators page describes it: the public PyTorch API
one namespace at a time (`torch`, `torch.Tensor`, `torch.nn`, `torch.distributed`, ...), one row
per API, and one of three values:

- ``Y``, with the limitations column saying which kind: ``Native`` (runs on the device),
  ``Host-only`` (plain Python on the host, no tensor math) or ``Needs a process group``;
- ``CPU_FALLBACK``, with the limitations column naming the ATen op that runs on the host and,
  where coverage differs by dtype, the affected dtypes;
- ``N``: not supported.

The exact column headers were not readable, so they are found by meaning: the API is the first
column, the value the column headed like "status"/"supported" (else the second), the limitations
the column headed like "limitation"/"notes" (else the last). A namespace is a markdown heading
that is a dotted name (`## torch.nn.functional`); a bare API name in a row is qualified with it.
Any problem is one `DataFileError` naming the file, the line and the row. No torch here.
"""

import hashlib
import re
from pathlib import Path
from typing import NamedTuple

from neuron_migrate.errors import DataFileError
from neuron_migrate.matrix.names import normalize_op

VALUES = ("Y", "CPU_FALLBACK", "N")
_KINDS = (
    ("host_only", re.compile(r"^host[- ]only\b", re.I)),
    ("needs_process_group", re.compile(r"^needs[- ]a[- ]process[- ]group\b", re.I)),
    ("native", re.compile(r"^native\b", re.I)),
)
_HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")
_NAMESPACE = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*$")
_ATEN = re.compile(r"\baten(?:::|\.)([A-Za-z_]\w*)(?:\.([A-Za-z_]\w*))?")
_DTYPES = (
    "float64",
    "float32",
    "float16",
    "bfloat16",
    "float8_e4m3fn",
    "float8_e5m2",
    "complex128",
    "complex64",
    "int64",
    "int32",
    "int16",
    "int8",
    "uint8",
    "bool",
)
_DTYPE = re.compile(r"\b(?:torch\.)?(" + "|".join(_DTYPES) + r")\b")
# Where a limitation's clauses part: `;`, a sentence, `but`/`while`, or a comma before a verb
# of its own (`native for float32, falls back for int64`; not the list `float64, int64`).
_CLAUSE = re.compile(
    r";|\.\s|\b(?:but|while|whereas)\b|,\s*(?=(?:and\s+)?(?:is\s+|are\s+)?"
    r"(?:native|supported|runs?|falls?|fallback|cpu)\b)",
    re.I,
)
_NATIVE_CLAUSE = re.compile(r"\b(?:native(?:ly)?|supported|on the device)\b", re.I)
_FALLBACK_CLAUSE = re.compile(r"\b(?:falls?\s+back|fallback|cpu|not\s+supported|unsupported)", re.I)
_VERSION = re.compile(r"torch-neuronx\s+v?(\d+(?:\.\d+)+)", re.I)
_TORCH = re.compile(r"(?:PyTorch|torch)\s+v?(\d+\.\d+(?:\.\d+)?)\b(?!\.\d)")


class TableRow(NamedTuple):
    api: str  # qualified: torch.sort, Tensor.sort, torch.nn.functional.gelu
    value: str  # Y | CPU_FALLBACK | N
    kind: str  # native | host_only | needs_process_group for Y, else ""
    ops: tuple[str, ...]  # ATen ops a CPU_FALLBACK row names
    dtypes: tuple[str, ...]  # dtypes it says are affected (empty: all)
    limitations: str
    line: int


class ApiTable(NamedTuple):
    path: str
    sha256: str
    version: str  # torch-neuronx version named in the title ("" when it names none)
    torch: str  # PyTorch version named in the title ("" when it names none)
    rows: tuple[TableRow, ...]


def read_table(path: Path, shown: str | None = None) -> ApiTable:
    """Parse the table at `path`; the first problem raises a one-line `DataFileError`."""
    shown = shown or str(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DataFileError(shown, "<file>", f"cannot read: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise DataFileError(shown, "<file>", "not UTF-8 text") from None
    return _Reader(shown).read(text, hashlib.sha256(data).hexdigest())


class _Reader:
    def __init__(self, shown: str) -> None:
        self.shown = shown
        self.namespace = ""
        self.columns: tuple[int, int, int] | None = None  # api, value, limitations
        self.rows: dict[str, TableRow] = {}
        self.version = ""
        self.torch = ""

    def fail(self, line: int, row: str, problem: str) -> DataFileError:
        where = f"line {line}" + (f" (row {row!r})" if row else "")
        return DataFileError(self.shown, where, problem)

    def read(self, text: str, sha256: str) -> ApiTable:
        lines = text.splitlines()
        for number, raw in enumerate(lines, 1):
            line = raw.strip()
            heading = _HEADING.match(line)
            if heading:
                self.heading(heading.group(1))
                continue
            if not line.startswith("|"):
                self.columns = None if line else self.columns
                continue
            cells = _cells(line)
            if self.columns is None:
                self.columns = self.header(cells, number)
            elif not all(re.fullmatch(r":?-{2,}:?", c) for c in cells):
                self.row(cells, number)
        if not self.rows:
            raise DataFileError(self.shown, "<file>", "no table rows (| API | Y/CPU_FALLBACK/N |)")
        rows = tuple(sorted(self.rows.values(), key=lambda r: r.line))
        return ApiTable(self.shown, sha256, self.version, self.torch, rows)

    def heading(self, text: str) -> None:
        name = text.strip().strip("`").strip()
        if not self.version and _VERSION.search(text):
            self.version = _VERSION.search(text).group(1)  # type: ignore[union-attr]
            torch = _TORCH.search(_VERSION.sub("", text))
            self.torch = torch.group(1) if torch else ""
        if _NAMESPACE.match(name) and (name.startswith("torch") or "." in name):
            self.namespace = name
        self.columns = None

    def header(self, cells: list[str], number: int) -> tuple[int, int, int]:
        lowered = [c.lower() for c in cells]
        if len(cells) < 2:
            raise self.fail(number, "", "a table needs an API column and a value column")
        value = next((i for i, c in enumerate(lowered) if re.search(r"status|support|value", c)), 1)
        limits = next(
            (i for i, c in enumerate(lowered) if re.search(r"limitation|note|detail", c)),
            len(cells) - 1,
        )
        return 0, value, limits if limits != value else -1

    def row(self, cells: list[str], number: int) -> None:
        assert self.columns is not None
        api_col, value_col, limits_col = self.columns
        width = max(api_col, value_col, limits_col) + 1
        api = _qualify(_plain(cells[api_col]) if cells else "", self.namespace)
        if len(cells) < width:
            raise self.fail(number, api, f"expected {width} cells, found {len(cells)}")
        if not api or not _NAMESPACE.match(api):
            raise self.fail(number, cells[api_col], "the first cell is not an API name")
        value = _plain(cells[value_col]).upper()
        if value not in VALUES:
            raise self.fail(number, api, f"{cells[value_col]!r} is not one of {', '.join(VALUES)}")
        limits = _plain(cells[limits_col]) if limits_col >= 0 else ""
        kind = ""
        ops: tuple[str, ...] = ()
        dtypes: tuple[str, ...] = ()
        if value == "Y":
            kind = next((k for k, pattern in _KINDS if pattern.match(limits)), "")
            if not kind:
                raise self.fail(
                    number,
                    api,
                    "a Y row says Native, Host-only or Needs a process group, "
                    f"not {limits or 'nothing'!r}",
                )
        elif value == "CPU_FALLBACK":
            ops = tuple(dict.fromkeys(_aten_ops(limits)))
            if not ops:
                raise self.fail(number, api, "a CPU_FALLBACK row names the ATen op (aten::...)")
            dtypes = _fallback_dtypes(limits)
        if api in self.rows:
            first = self.rows[api].line
            raise self.fail(number, api, f"listed twice (first on line {first})")
        self.rows[api] = TableRow(api, value, kind, ops, dtypes, limits, number)


def _cells(line: str) -> list[str]:
    body = line.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") and not body.endswith("\\|") else body
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", body)]


def _plain(cell: str) -> str:
    """A cell without markdown emphasis, code ticks or a trailing call's parentheses."""
    text = re.sub(r"`|\*\*?", "", cell).strip()
    return text[:-2] if text.endswith("()") else text


def _qualify(name: str, namespace: str) -> str:
    """The API map's spelling: `torch.Tensor.sort` is `Tensor.sort`; bare names take the
    namespace of their heading."""
    if namespace and not name.startswith(("torch.", "Tensor.", "functorch.")) and name:
        name = f"{namespace}.{name}"
    if name.startswith("torch.Tensor."):
        name = name[len("torch.") :]
    return name


def _fallback_dtypes(text: str) -> tuple[str, ...]:
    """The dtypes a CPU_FALLBACK row says fall back: those it names, except in a clause that
    says they run natively (`native for float32, falls back for int64` is int64 only)."""
    dtypes: dict[str, None] = {}
    for clause in _CLAUSE.split(text):
        if _NATIVE_CLAUSE.search(clause) and not _FALLBACK_CLAUSE.search(clause):
            continue
        dtypes.update(dict.fromkeys(m.group(1) for m in _DTYPE.finditer(clause)))
    return tuple(dtypes)


def _aten_ops(text: str) -> list[str]:
    ops = []
    for match in _ATEN.finditer(text):
        base, overload = match.group(1), match.group(2)
        ops.append(normalize_op(f"aten::{base}" + (f".{overload}" if overload else "")))
    return ops
