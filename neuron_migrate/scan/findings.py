"""The plain records that flow from the engine to the reports: findings and per-file errors.

They pickle across the process pool and serialise to JSON. They are named tuples, not frozen
dataclasses: see `neuron_migrate.scan.records` for why.
"""

from collections.abc import Mapping
from typing import Any, Literal, NamedTuple

from neuron_migrate.digests import sha256

# What a finding says about the code on the target device.
Status = Literal[
    "native",  # runs on the device
    "cpu_fallback",  # runs, but on the host CPU (slow, copies)
    "unsupported",  # refused / raises on the device
    "float64",  # 64-bit float computed as float32 (precision loss)
    "xla",  # a torch_xla use (or XLA idiom) that must change
    "advice",  # runs, but should change (e.g. torch.compile without dynamic=False)
]
STATUSES: tuple[str, ...] = ("native", "cpu_fallback", "unsupported", "float64", "xla", "advice")

Severity = Literal["error", "warning", "info"]

Category = Literal[
    "torch_xla",  # an API of the torch_xla package
    "xla_idiom",  # XLA usage outside the torch_xla namespace ('xla' strings, env vars, ...)
    "op",  # a torch op/API classified through the API->aten map and the matrix
    "dtype",  # 64-bit floats
    "namespace",  # torch.sparse / torch.func / torch.nested / torch.distributions / torch.fft
    "memory_format",  # channels_last
    "compile",  # torch.compile rules
    "ambiguous",  # a name with several possible meanings: reported, never rewritten
]


class Finding(NamedTuple):
    code: str
    category: str
    status: str
    severity: str
    path: str  # relative to the scanned root, with forward slashes
    line: int  # 1-based
    col: int  # 0-based, in characters
    end_line: int
    end_col: int
    api: str  # qualified name, e.g. torch_xla.core.xla_model.mark_step or torch.sort
    message: str
    aten: tuple[str, ...] = ()
    replacement: str | None = None  # the native form, or None when a person must decide
    fixable: bool = False  # `rewrite` has a rule that changes this site
    confidence: Literal["high", "low"] = "high"
    snippet: str = ""  # the source line, stripped: feeds the fingerprint
    fingerprint: str = ""
    cell: int | None = None  # notebook cell index, when the file is a notebook
    # How sure the matrix is of the status (`matrix.model.CONFIDENCES`): confirmed, released,
    # dev-snapshot, inferred or unknown; "" for a finding that is not a matrix verdict.
    evidence_confidence: str = ""

    def to_json(self) -> dict[str, Any]:
        # Spelled out, in field order: every finding of a scan passes through here once.
        return {
            "code": self.code,
            "category": self.category,
            "status": self.status,
            "severity": self.severity,
            "path": self.path,
            "line": self.line,
            "col": self.col,
            "end_line": self.end_line,
            "end_col": self.end_col,
            "api": self.api,
            "message": self.message,
            "aten": list(self.aten),
            "replacement": self.replacement,
            "fixable": self.fixable,
            "confidence": self.confidence,
            "snippet": self.snippet,
            "fingerprint": self.fingerprint,
            "cell": self.cell,
            "evidence_confidence": self.evidence_confidence,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Finding":
        """The finding of a `to_json` object; keys that are not fields (a report's `gate`,
        `baseline`, `suppression`) are ignored."""
        values = {key: data[key] for key in cls._fields if key in data}
        values["aten"] = tuple(values.get("aten", ()))
        return cls(**values)


class FileError(NamedTuple):
    path: str
    reason: str  # one line: "syntax error at line 3: ...", "not UTF-8", ...
    kind: str  # syntax | encoding | binary | unreadable | too_large | loop | internal | timeout
    cell: int | None = None  # notebooks: the (first) cell that does not parse
    # Only part of the file could not be read (a notebook cell): the rest was, and its
    # findings are reported beside this error.
    partial: bool = False

    @property
    def what(self) -> str:
        """How much of the file was not read, as reports say it."""
        return "partly scanned" if self.partial else "not scanned"

    def to_json(self) -> dict[str, Any]:
        return self._asdict()


def fingerprint(path: str, code: str, api: str, snippet: str, occurrence: int) -> str:
    """A hash that survives lines moving: it uses the file, the rule, the API, the stripped
    source line and which occurrence of that same tuple in the file this is -- never the line
    number."""
    key = "\x1f".join((path, code, api, " ".join(snippet.split()), str(occurrence)))
    return sha256(key.encode()).hexdigest()[:20]


class Fingerprints:
    """`fingerprint` for many findings of one file, each costing as much as its own fields and
    not its line's length: a line is normalised once, and the hash of the fields that one
    (code, API, line) share is taken once and copied for each occurrence. The same digests."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._prefixes: dict[tuple[str, str, str], Any] = {}

    def of(self, code: str, api: str, normalised: str, occurrence: int) -> str:
        """The fingerprint, `normalised` being `" ".join(snippet.split())`."""
        key = (code, api, normalised)
        prefix = self._prefixes.get(key)
        if prefix is None:
            text = "\x1f".join((self.path, code, api, normalised)) + "\x1f"
            prefix = self._prefixes[key] = sha256(text.encode())
        digest = prefix.copy()
        digest.update(str(occurrence).encode())
        return str(digest.hexdigest()[:20])


# A finding's snippet: its line, stripped; of a longer line, this many characters around it.
SNIPPET_CHARS = 160


def bounded_snippet(lines: list[str], line: int, col: int) -> str:
    """The finding's line, stripped, or of a line longer than SNIPPET_CHARS the part around
    `col` with `…` where it is cut: a report's size follows its findings, not its lines."""
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    stripped = text.strip()
    if len(stripped) <= SNIPPET_CHARS:
        return stripped
    start = max(0, min(col - SNIPPET_CHARS // 4, len(text) - SNIPPET_CHARS))
    part = text[start : start + SNIPPET_CHARS].strip()
    return ("…" if start > 0 else "") + part + ("…" if start + SNIPPET_CHARS < len(text) else "")


class FileResult(NamedTuple):
    """What the analyzer learned from one file."""

    path: str
    findings: tuple[Finding, ...] = ()
    error: FileError | None = None
    unmapped_apis: Mapping[str, int] = {}  # torch API -> calls; read, never changed
    # What the file's compiles reach in other modules: (imported qualified name, line).
    compiles: tuple[tuple[str, int], ...] = ()
