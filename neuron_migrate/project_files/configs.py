"""YAML and JSON job configs: Kubernetes, SageMaker, ParallelCluster, Slurm wrappers, CI
workflows, docker-compose and conda environments.

Read as a node tree with positions (PyYAML's composer; JSON is read the same way after `json`
has checked it), so anchors and aliases are one node seen once. Found in it: environment entries
(`KEY: value` mappings, `- name: KEY` / `value:` lists, `KEY=value` list items), the shell of
`run:` / `command:` / `script:` keys, instance types, container images and DLAMI environments.
"""

import re
from collections.abc import Iterator
from typing import Any

from neuron_migrate.project_files.hits import (
    Hit,
    ReaderError,
    indent_at,
    line_end,
    line_start,
    unquoted,
    whole_lines,
)
from neuron_migrate.project_files.shell import INSTANCE_TYPE, VENV, Fragment, shell_hits

_ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")
_ENV_PAIR = re.compile(r"^(?P<name>[A-Za-z_]\w*)=")
# Keys whose value is a shell script (CI steps, job specs).
_SHELL_KEYS = frozenset(
    {"run", "script", "before_script", "after_script", "commands", "cmd", "shell", "pre_script"}
)
# Keys whose value is a command: one string (shell) or a list (an argv).
_ARGV_KEYS = frozenset({"command", "args", "entrypoint", "Command", "Args", "Entrypoint"})
_PYTHON_VERSION_KEYS = frozenset({"python-version", "python_version", "python"})
_PYTHON_VERSION = re.compile(r"^3\.\d+(\.\d+)?$")
_IMAGE_KEYS = frozenset({"image", "Image", "ImageUri", "TrainingImage", "image_uri", "imageUri"})


class ConfigError(ReaderError):
    """YAML or JSON this reader cannot parse; the message is one line."""


def config_hits(text: str, kind: str) -> Iterator[Hit]:
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    if kind == "json":
        import json

        try:
            json.loads(text)
        except ValueError as exc:
            raise ConfigError(f"invalid JSON: {exc}") from exc
    try:
        documents = list(yaml.compose_all(text, Loader=loader))
    except yaml.YAMLError as exc:
        # Valid JSON that YAML 1.1 refuses (a tab, say), or a Helm / Jinja template that is YAML
        # only once rendered: instance types are still found, by their spelling.
        if kind == "json" or "{{" in text or "{%" in text:
            yield from _plain_hits(text)
            return
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or "cannot parse"
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"invalid YAML{where}: {problem}") from exc
    reader = _Reader(text, kind)
    for document in documents:
        if document is not None:
            yield from reader.node(document, None)


def _plain_hits(text: str) -> Iterator[Hit]:
    for found in INSTANCE_TYPE.finditer(text):
        yield Hit("instance-type", found[1], found.start(), found.end(), None)


class _Reader:
    def __init__(self, text: str, kind: str) -> None:
        self.text = text
        self.kind = kind
        self.editable = kind != "json"  # JSON has no comments and its commas: report only
        self.seen: set[int] = set()

    def node(self, node: Any, key: str | None) -> Iterator[Hit]:
        if id(node) in self.seen:
            return  # an alias of an anchor already read
        self.seen.add(id(node))
        tag = type(node).__name__
        if tag == "MappingNode":
            yield from self.mapping(node, key)
        elif tag == "SequenceNode":
            yield from self.sequence(node, key)
        elif tag == "ScalarNode":
            yield from self.scalar(node, key)

    # -- mappings ----------------------------------------------------------------------------

    def mapping(self, node: Any, parent_key: str | None) -> Iterator[Hit]:
        pairs = node.value
        # Kubernetes splits `command: ["bash", "-c"]` from `args: [SCRIPT]`: then args is shell.
        shell_args = any(
            getattr(k, "value", None) in ("command", "Command")
            and type(v).__name__ == "SequenceNode"
            and v.value
            and getattr(v.value[-1], "value", None) == "-c"
            for k, v in pairs
        )
        for key_node, value in pairs:
            key = key_node.value if type(key_node).__name__ == "ScalarNode" else None
            if (
                isinstance(key, str)
                and _ENV_NAME.match(key)
                and type(value).__name__ == "ScalarNode"
            ):
                self.seen.add(id(value))
                drop = None
                if self.editable and len(pairs) > 1 and not node.flow_style:
                    drop = whole_lines(self.text, key_node.start_mark.index, value.end_mark.index)
                hit = self.hit("env-var", key, key_node, drop=drop, name=key_node)
                yield hit._replace(
                    group_key=node.start_mark.index,
                    group_size=len(pairs),
                    value=_scalar_value(value),
                )
                yield from self.strings(value)
                continue
            if self.kind == "conda" and key == "dependencies" and parent_key is None:
                yield from self.conda(value, pip=False)
                continue
            if key in _SHELL_KEYS or key in _ARGV_KEYS:
                argv = key in _ARGV_KEYS and not (shell_args and key in ("args", "Args"))
                yield from self.command(value, argv=argv)
                continue
            if key in _PYTHON_VERSION_KEYS:  # setup-python, a CI matrix
                yield from self.python_versions(value)
                continue
            if key in _IMAGE_KEYS and type(value).__name__ == "ScalarNode":
                self.seen.add(id(value))
                yield self.hit("image", str(value.value), value)
                continue
            yield from self.node(value, key)

    def sequence(self, node: Any, key: str | None) -> Iterator[Hit]:
        items = node.value
        for item in items:
            kind = type(item).__name__
            if kind == "MappingNode" and id(item) not in self.seen:
                entry = {k.value: v for k, v in item.value if type(k).__name__ == "ScalarNode"}
                name = entry.get("name")
                if (
                    name is not None
                    and type(name).__name__ == "ScalarNode"
                    and ("value" in entry or "valueFrom" in entry)
                    and _ENV_NAME.match(str(name.value))
                ):
                    self.seen.add(id(item))
                    drop = (
                        self.item_drop(item)
                        if len(items) > 1
                        and set(entry)
                        <= {
                            "name",
                            "value",
                        }
                        else None
                    )
                    hit = self.hit("env-var", str(name.value), name, drop=drop, name=name)
                    given = entry.get("value")
                    yield hit._replace(
                        group_key=node.start_mark.index,
                        group_size=len(items),
                        value=_scalar_value(given) if given is not None else None,
                    )
                    for value in entry.values():
                        self.seen.add(id(value))
                        yield from self.strings(value)
                    continue
            if kind == "ScalarNode" and key in ("env", "environment", "Environment"):
                pair = _ENV_PAIR.match(str(item.value))
                if pair is not None:
                    self.seen.add(id(item))
                    drop = self.item_drop(item) if len(items) > 1 else None
                    start = self.value_start(item)
                    name_span = (start, start + len(pair["name"])) if start is not None else None
                    hit = self.hit("env-var", pair["name"], item, drop=drop, name_span=name_span)
                    yield hit._replace(
                        group_key=node.start_mark.index,
                        group_size=len(items),
                        value=unquoted(str(item.value)[pair.end() :]),
                    )
                    yield from self.strings(item)
                    continue
            yield from self.node(item, key)

    def item_drop(self, item: Any) -> tuple[int, int] | None:
        """The lines of a block sequence item (`- ...`), when nothing else shares them."""
        if not self.editable:
            return None
        start = item.start_mark.index
        first = line_start(self.text, start)
        if self.text[first:start].strip() != "-":
            return None
        end = item.end_mark.index
        end_line = line_start(self.text, end)
        if not self.text[end_line:end].strip():  # the item ends where the next line begins
            return first, end_line
        stop = line_end(self.text, end)
        if self.text[end:stop].strip():
            return None
        return first, stop

    # -- scalars and shell -------------------------------------------------------------------

    def scalar(self, node: Any, key: str | None) -> Iterator[Hit]:
        yield from self.strings(node)

    def strings(self, node: Any) -> Iterator[Hit]:
        if type(node).__name__ != "ScalarNode":
            yield from self.node(node, None)
            return
        value = str(node.value)
        if "xlarge" in value:
            for found in INSTANCE_TYPE.finditer(value):
                yield self.sub_hit("instance-type", found[1], node, found.start(), found.end())
        if "_venv_" in value:
            for found in VENV.finditer(value):
                yield self.sub_hit("venv", found[0], node, found.start(), found.end())

    def sub_hit(self, idiom: str, detail: str, node: Any, start: int, end: int) -> Hit:
        base = self.value_start(node)
        if base is None or node.style in ("|", ">"):
            return self.hit(idiom, detail, node)
        marker_at = self.marker_for(node)
        return Hit(idiom, detail, base + start, base + end, marker_at, self.indent(marker_at))

    def value_start(self, node: Any) -> int | None:
        """Where a one-line scalar's value sits verbatim in the text, if it does."""
        start = node.start_mark.index
        if node.style in ('"', "'"):
            start += 1
        value = str(node.value)
        return start if self.text.startswith(value, start) else None

    def command(self, node: Any, argv: bool) -> Iterator[Hit]:
        kind = type(node).__name__
        self.seen.add(id(node))
        if kind == "ScalarNode":
            fragment = self.fragment(node)
            if fragment is not None:
                yield from shell_hits(fragment, self.text)
            yield from self.strings(node)
        elif kind == "SequenceNode":
            scalars = [i for i in node.value if type(i).__name__ == "ScalarNode"]
            for item in node.value:
                self.seen.add(id(item))
            if not argv:
                for item in scalars:  # each item is a line of script
                    fragment = self.fragment(item)
                    if fragment is not None:
                        yield from shell_hits(fragment, self.text)
            else:
                yield from self.argv(scalars)
            for item in scalars:
                yield from self.strings(item)
        else:
            yield from self.node(node, None)

    def argv(self, items: list[Any]) -> Iterator[Hit]:
        """A command as a list: `["bash", "-c", SCRIPT]` is SCRIPT; anything else one argv."""
        values = [str(i.value) for i in items]
        for i, value in enumerate(values[:-1]):
            if value == "-c" and i + 1 < len(items):
                fragment = self.fragment(items[i + 1])
                if fragment is not None:
                    yield from shell_hits(fragment, self.text)
                return
        import shlex

        text = " ".join(shlex.quote(v) for v in values)
        starts = []
        cursor = 0
        for value in values:
            starts.append(cursor)
            cursor += len(shlex.quote(value)) + 1
        marker_at = self.marker_for(items[0]) if items else None

        def to_file(offset: int) -> int:
            index = max(i for i, s in enumerate(starts) if s <= offset) if starts else 0
            return int(items[index].start_mark.index) if items else 0

        fragment = Fragment(
            text, to_file, False, marker_at, self.indent(marker_at) if marker_at is not None else ""
        )
        yield from shell_hits(fragment, self.text)

    def fragment(self, node: Any) -> Fragment | None:
        value = str(node.value)
        if node.style == "|":
            return self.block_fragment(node, value)
        start = self.value_start(node)
        marker_at = self.marker_for(node)
        indent = self.indent(marker_at) if marker_at is not None else ""
        if start is not None and "\n" not in value:
            return Fragment(value, lambda o: o + start, self.editable, marker_at, indent)
        anchor = int(node.start_mark.index)
        return Fragment(value, lambda o: anchor, False, marker_at, indent)

    def block_fragment(self, node: Any, value: str) -> Fragment | None:
        """A literal block (`run: |`): each line of the script sits at a known place."""
        text = self.text
        offset = line_end(text, node.start_mark.index)
        lines = value.split("\n")
        starts: list[tuple[int, int]] = []  # (offset in value, offset in file)
        position = 0
        indent: int | None = None
        exact = True
        for line in lines:
            if position >= len(value):
                break
            if indent is None and line:
                indent = len(text[offset:]) - len(text[offset:].lstrip(" "))
            file_at = offset + (indent or 0) if line else offset
            if line and not text.startswith(line, file_at):
                exact = False
                break
            starts.append((position, file_at))
            position += len(line) + 1
            offset = line_end(text, offset)
        if not exact or not starts:
            anchor = int(node.start_mark.index)
            marker_at = self.marker_for(node)
            return Fragment(value, lambda o: anchor, False, marker_at, self.indent(marker_at))

        def to_file(o: int) -> int:
            from bisect import bisect_right

            index = bisect_right([s for s, _ in starts], o) - 1
            base, file_at = starts[max(index, 0)]
            return file_at + (o - base)

        return Fragment(value, to_file, self.editable)

    def python_versions(self, node: Any) -> Iterator[Hit]:
        """`python-version: "3.10"` or a list of them: a Python the job runs on."""
        from neuron_migrate.project_files.specifiers import python_hit

        kind = type(node).__name__
        items = node.value if kind == "SequenceNode" else [node]
        self.seen.add(id(node))
        for item in items:
            if type(item).__name__ != "ScalarNode":
                continue
            self.seen.add(id(item))
            value = str(item.value)
            start = self.value_start(item)
            if not _PYTHON_VERSION.match(value) or start is None:
                continue
            marker_at = self.marker_for(item)
            hit = python_hit(f"=={value}.*", start, start + len(value), self.text, marker_at)
            if hit is not None:
                yield hit._replace(indent=self.indent(marker_at), detail=value)

    def conda(self, node: Any, pip: bool) -> Iterator[Hit]:
        from neuron_migrate.project_files.deps import conda_dependency_hits

        self.seen.add(id(node))
        if type(node).__name__ != "SequenceNode":
            yield from self.node(node, "dependencies")
            return
        for item in node.value:
            kind = type(item).__name__
            if kind == "ScalarNode":
                self.seen.add(id(item))
                start = self.value_start(item)
                if start is not None:
                    yield from conda_dependency_hits(str(item.value), start, self.text, pip)
            elif kind == "MappingNode":
                for key, value in item.value:
                    if getattr(key, "value", None) == "pip":
                        yield from self.conda(value, pip=True)
                    else:
                        yield from self.node(value, None)

    # -- hits --------------------------------------------------------------------------------

    def marker_for(self, node: Any) -> int | None:
        if not self.editable:
            return None
        return line_start(self.text, node.start_mark.index)

    def indent(self, marker_at: int | None) -> str:
        if marker_at is None:
            return ""
        return indent_at(self.text, marker_at)

    def hit(
        self,
        idiom: str,
        detail: str,
        node: Any,
        *,
        drop: tuple[int, int] | None = None,
        name: Any = None,
        name_span: tuple[int, int] | None = None,
    ) -> Hit:
        marker_at = self.marker_for(node)
        if name is not None and self.editable:
            start = self.value_start(name)
            if start is not None:
                name_span = (start, start + len(str(name.value)))
        return Hit(
            idiom,
            detail,
            int(node.start_mark.index),
            int(node.end_mark.index),
            marker_at,
            self.indent(marker_at),
            drop=drop if self.editable else None,
            name=name_span if self.editable else None,
        )


def _scalar_value(node: Any) -> str | None:
    """A YAML/JSON scalar's value as the environment gets it (`false` -> "false", `0` -> "0");
    None for anything else, or where it expands a variable."""
    if type(node).__name__ != "ScalarNode":
        return None
    value = str(node.value)
    return None if "$" in value else value
