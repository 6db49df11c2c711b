"""The rule records: what a rule matches, how it rewrites, and the examples that test it.

Rules are named tuples holding only tuples and strings, so they hash, pickle across the process
pool and compare by value (see `neuron_migrate.scan.records` for why not frozen dataclasses).
"""

import re
from typing import Literal, NamedTuple

Safety = Literal["safe", "unsafe"]
Severity = Literal["error", "warning", "info"]

SAFETIES: tuple[str, ...] = ("safe", "unsafe")
SEVERITIES: tuple[str, ...] = ("error", "warning", "info")

# Hundreds digit of a code -> the family directory under rules/.
FAMILIES: dict[str, str] = {
    "1": "device",
    "2": "ranks",
    "3": "collectives",
    "4": "launch",
    "5": "utils",
    "6": "sharding",
    "7": "env",
    "8": "legacy",
    "9": "torch-ops",
}


class Match(NamedTuple):
    """What a rule applies to. A rule may list several kinds of match."""

    qualnames: tuple[str, ...] = ()  # exact names; an entry ending in ".*" covers a module
    idiom: str | None = None  # an idiom kind the analyzer emits, e.g. "xla-device-string"
    details: tuple[str, ...] = ()  # idiom details this rule takes (fnmatch patterns); () = all
    analyzer: str | None = None  # a torch-op finding kind, e.g. "op-cpu-fallback"
    # Functions whose call asks whether torch_xla is there (`transformers.utils.
    # is_torch_xla_available`): a guard through one is resolved as a test of an import's name.
    predicates: tuple[str, ...] = ()


# A template's `{param}` holes, and the form of a template that only renames the callee.
TEMPLATE_HOLE = re.compile(r"\{(\w+)\}")
# A dotted name renames the callee; a constant (`True`) is the call's value instead.
TEMPLATE_RENAME = re.compile(r"^(?!(?:True|False|None)$)[A-Za-z_][\w.]*(\{name\}[\w]*)?$")


class Rewrite(NamedTuple):
    """A template (an expression with `{param}` holes) or the name of a Python transform."""

    template: str | None = None
    transform: str | None = None
    # The torch_xla signature, so positional and keyword arguments bind to the same holes.
    params: tuple[str, ...] = ()
    # Source text used for a parameter the call leaves out.
    defaults: tuple[tuple[str, str], ...] = ()
    # Free-form settings for a named transform (e.g. the new name of an environment variable).
    options: tuple[tuple[str, str], ...] = ()

    def default(self, param: str) -> str | None:
        return dict(self.defaults).get(param)

    def option(self, name: str, fallback: str | None = None) -> str | None:
        return dict(self.options).get(name, fallback)

    def template_replaces_reference(self) -> bool:
        """Whether the template can stand for the function object (`_rank = xm.get_ordinal`)
        as well as for its call: a rename, or the value of a function without parameters,
        which becomes `lambda: TEMPLATE`."""
        text = self.template
        if text is None:
            return False
        if TEMPLATE_RENAME.match(text):
            return True
        return not self.params and not TEMPLATE_HOLE.search(text)


class Example(NamedTuple):
    before: str
    after: str
    # "unsafe": the example shows the output under --unsafe-fixes.
    fixes: Safety = "safe"


# The kinds of project file besides Python a rule may apply to (`neuron_migrate.project_files`).
FILE_KINDS: tuple[str, ...] = (
    "shell",
    "makefile",
    "dotenv",
    "dockerfile",
    "requirements",
    "pyproject",
    "pipfile",
    "setup-cfg",
    "setup-py",
    "tox",
    "conda",
    "yaml",
    "json",
)
# What a project-file rule matches; each reader says which of these it can find.
FILE_IDIOMS: tuple[str, ...] = (
    "env-var",  # an environment variable set, passed or unset
    "command",  # a command run by name (a launcher wrapper)
    "python-module",  # `python -m MODULE`
    "torchrun",  # a torchrun (or `python -m torch.distributed.run`) launch
    "package",  # a dependency requirement, by normalised project name
    "package-pin",  # a torch / torch-neuronx requirement that excludes the target's pair
    "requires-python",  # the Python versions a project declares
    "instance-type",  # an EC2 / SageMaker instance type
    "image",  # a container image reference (FROM, image:)
    "venv",  # a DLAMI virtual environment path
)
# How `rewrite` treats a project-file finding.
FILE_FIXES: tuple[str, ...] = (
    "drop",  # remove the assignment / entry (meaning certain)
    "rename",  # rename the variable to `rename_to`
    "pin",  # set a requirement's version to the target's pair (torch, torch-neuronx)
    "keep",  # matched and left alone: no finding
    "marker",  # a TODO comment in the file's syntax
    "report",  # a finding only: no change, no marker
)


# What an environment variable's value may be that changes what a rule says of it (`values:`).
VALUE_CLASSES: tuple[str, ...] = (
    "disabled",  # "0", "false", "no", "off", empty, or the variable unset: the switch is off
    "url",  # a URL (`s3://bucket/cache`): no local directory
)
_OFF_VALUES = frozenset({"0", "false", "no", "off", ""})
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def value_class(value: str | None, unset: bool = False) -> str | None:
    """The class of an environment variable's value (see VALUE_CLASSES), None when it has
    none or the value is not known (an expansion, `export K` alone)."""
    if unset:
        return "disabled"
    if value is None:
        return None
    value = value.strip()
    if value.lower() in _OFF_VALUES:
        return "disabled"
    return "url" if _URL.match(value) else None


class ValueCase(NamedTuple):
    """What a rule says, and which fix it takes, where the variable's value is of one class:
    `XLA_USE_BF16=0` is disabled, so there is nothing to replace; a URL is no directory."""

    when: str  # one of VALUE_CLASSES
    fix: str  # one of FILE_FIXES (project files); in Python code any fix but a marker is none
    message: str  # the finding's message and marker text


class FileExample(NamedTuple):
    """A before/after pair (or an unchanged text, after == before) in one file kind."""

    kind: str
    before: str
    after: str
    fixes: Safety = "safe"


class FileRule(NamedTuple):
    """How a rule applies to launch scripts, dependency files, containers and job configs."""

    kinds: tuple[str, ...]
    idiom: str
    details: tuple[str, ...]  # fnmatch patterns over the idiom's detail; () = all
    fix: str
    status: str  # the finding's status: xla | unsupported | advice
    rename_to: str | None = None
    message: str | None = None  # the finding's message and marker text (default: manual)
    examples: tuple[FileExample, ...] = ()


class Rule(NamedTuple):
    code: str
    name: str
    family: str
    summary: str
    why: str
    match: Match
    rewrite: Rewrite | None
    safety: Safety
    safety_note: str
    replacement: str | None
    manual: str | None
    severity: Severity
    path: str
    examples: tuple[Example, ...] = ()
    unchanged: tuple[str, ...] = ()
    files: FileRule | None = None
    values: tuple[ValueCase, ...] = ()

    def value_case(self, value: str | None, unset: bool = False) -> ValueCase | None:
        """The case of `values:` a variable's value falls under, if any."""
        if not self.values:
            return None
        found = value_class(value, unset)
        return next((case for case in self.values if case.when == found), None)

    @property
    def has_rewrite(self) -> bool:
        return self.rewrite is not None

    @property
    def keeps(self) -> bool:
        """Whether the rule matches something that stays as it is (a Neuron Runtime variable):
        advice about the code, not a torch_xla use to migrate."""
        return self.rewrite is not None and self.rewrite.transform == "keep"

    @property
    def advises(self) -> bool:
        """Whether its findings are advice, not a torch_xla use to migrate (nothing for a
        `--fail-on xla` gate): it keeps what it matches, or its findings in project files are
        advice (NEURON_CC_FLAGS: the compiler's, not XLA's), wherever the use is."""
        return self.keeps or (self.files is not None and self.files.status == "advice")

    @property
    def fix_safety(self) -> str:
        """How `rewrite` treats this rule, in the words `rules list` prints."""
        if self.match.analyzer is not None:
            return "report only"
        if self.files is not None and self.match == Match():  # a rule for project files only
            if self.files.fix == "report":
                return "report only"
            return self.safety if self.files.fix in ("drop", "rename", "pin") else "manual"
        if self.rewrite is None:
            return "manual"
        return self.safety

    def marker(self) -> str:
        """The comment `rewrite` leaves where a person must act."""
        return f"# TODO(neuron-migrate {self.code}): {self.manual or self.summary}"

    def file_message(self) -> str:
        """What a project-file finding says, and its marker's text."""
        files = self.files
        return (files.message if files else None) or self.manual or self.summary
