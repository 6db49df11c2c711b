"""Shell: `*.sh` / `*.bash` scripts, extension-less files with a shell shebang, Dockerfile `RUN`
lines and the `run:` / `command:` / `script:` blocks of CI and job YAML.

Parsed with tree-sitter's bash grammar, which gives byte-exact spans, so a rewrite removes only
the bytes of the assignment it means and never touches a heredoc's body or a comment.
"""

import posixpath
import re
from collections.abc import Callable, Iterator
from functools import lru_cache
from typing import Any, NamedTuple

from neuron_migrate.project_files.hits import (
    Hit,
    PartlyRead,
    ReaderError,
    canonical_name,
    indent_at,
    line_start,
)

# Commands that run the command after them (their own options skipped).
_WRAPPERS = frozenset(
    {"exec", "nohup", "time", "sudo", "srun", "stdbuf", "nice", "numactl", "timeout", "xargs"}
)
_MESSAGES = frozenset({"echo", "printf", "logger"})
_PYTHON = re.compile(r"^python(\d+(\.\d+)?)?$")
_TORCHRUN_MODULES = frozenset({"torch.distributed.run", "torch.distributed.launch"})
# Python options that take a value (the next word is not the script).
_PYTHON_VALUE_OPTIONS = frozenset({"-W", "-X", "-Q"})
_PIP_VALUE_OPTIONS = frozenset(
    {
        "-r",
        "--requirement",
        "-c",
        "--constraint",
        "-e",
        "--editable",
        "-i",
        "--index-url",
        "--extra-index-url",
        "-f",
        "--find-links",
        "-t",
        "--target",
        "--prefix",
        "--root",
    }
)
_NPROC = re.compile(r"^--nproc[-_]per[-_]node(=(?P<value>.*))?$")
INSTANCE_TYPE = re.compile(r"\b(?:ml\.)?((?:trn|inf)\d+[a-z]?\.(?:\d+)?xlarge)\b")
VENV = re.compile(r"\baws_neuronx?_venv_\w+")
_STRING_NODES = frozenset({"word", "raw_string", "number", "string_content"})
_SKIP_NODES = frozenset({"comment", "heredoc_body", "heredoc_content"})


class ShellError(ReaderError):
    """The text is not shell the grammar can parse; the message is one line."""


class Fragment(NamedTuple):
    """Shell source, where it sits in its file, and where markers may go."""

    text: str
    to_file: Callable[[int], int]  # a fragment offset -> the file offset
    exact: bool  # the fragment's text sits verbatim in the file, so spans may be edited
    marker_at: int | None = None  # one place for every marker (Dockerfile: the instruction)
    marker_indent: str = ""


@lru_cache(maxsize=1)
def _parser() -> Any:
    import tree_sitter
    import tree_sitter_bash

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


def _char_index(text: str, data: bytes) -> Callable[[int], int]:
    """A byte offset into `data` (text encoded) -> the character offset into `text`."""
    if len(data) == len(text):
        return lambda offset: offset
    table: list[int] = []
    for index, char in enumerate(text):
        table.extend([index] * len(char.encode("utf-8")))
    table.append(len(text))
    return lambda offset: table[offset] if offset < len(table) else len(text)


def script_hits(text: str) -> Iterator[Hit]:
    """The hits of a whole shell script. Raises `PartlyRead`, with the hits of the others, when
    some of its statements do not parse, and `ShellError` when none does."""
    data = text.encode("utf-8")
    tree = _parser().parse(data)
    source = text
    if tree.root_node.has_error and _HEREDOC_THEN_REDIRECTS.search(text):
        source = _HEREDOC_THEN_REDIRECTS.sub(_redirects_first, text)
        data, tree = source.encode("utf-8"), _parser().parse(source.encode("utf-8"))
    fragment = Fragment(source, lambda o: o, True)
    if not tree.root_node.has_error:
        yield from _hits(fragment, text, data, tree)
        return
    # Per statement: the lines of those the grammar cannot read are named, and the statements
    # on other lines are read. By lines, for the grammar's recovery splits a bad one at will.
    statements = [n for n in tree.root_node.children if n.type != "comment"]
    errors = [line for n in statements if (line := _error_line(n)) is not None]
    if not errors:
        yield from _hits(fragment, text, data, tree)
        return
    bad = {row for n in statements if _error_line(n) is not None for row in _rows(n)}
    read = [n for n in statements if bad.isdisjoint(_rows(n))]
    if not read:
        raise ShellError(f"shell syntax error at line {min(errors)}")
    groups: list[list[int]] = []  # runs of lines not read
    for row in sorted(bad):
        if groups and groups[-1][-1] == row - 1:
            groups[-1].append(row)
        else:
            groups.append([row])
    named = ", ".join(str(group[0] + 1) for group in groups[:3])
    more = f" and {len(groups) - 3} more" if len(groups) > 3 else ""
    which = "the statement at line" if len(groups) == 1 else "the statements at lines"
    lines = source.splitlines(keepends=True)
    left = tuple("".join(lines[group[0] : group[-1] + 1]) for group in groups)
    hits = list(_hits(fragment, text, data, tree, read))
    raise PartlyRead(f"shell syntax error in {which} {named}{more}", hits, left)


def _error_line(statement: Any) -> int | None:
    """The line of the first error in a statement that bash would not take; None if none."""
    if not statement.has_error and statement.type != "ERROR" and not statement.is_missing:
        return None
    node = next((n for n in _errors(statement) if not _bash_takes(n)), None)
    return None if node is None else node.start_point[0] + 1


def _rows(node: Any) -> range:
    """The (0-based) lines a node is on; a node that ends at the start of a line is not on it."""
    first, (last, column) = node.start_point[0], node.end_point
    return range(first, (last if column == 0 and last > first else last + 1))


# A heredoc's start followed by redirects and then a pipe or a list (`python - <<EOF 2>&1 |
# tee log`), which bash runs and the grammar rejects; it reads the same with the redirects
# first (`python - 2>&1 <<EOF | tee log`). The swap keeps the line's length, so every offset
# outside it stays, and neither piece holds anything a hit is made of.
_HEREDOC_THEN_REDIRECTS = re.compile(
    r"(?P<heredoc><<-?[ \t]*(?:'[^'\n]*'|\"[^\"\n]*\"|\\?[\w.-]+))"
    r"(?P<redirects>(?:[ \t]+\d*(?:&>>|&>|>>|>&|<&|>|<)[ \t]*[^\s|;&<>()]+)+)"
    r"(?=[ \t]*(?:\||&&|;|$))",
    re.MULTILINE,
)


def _redirects_first(found: re.Match[str]) -> str:
    redirects = found["redirects"]
    blanks = len(redirects) - len(redirects.lstrip(" \t"))
    return redirects.lstrip(" \t") + redirects[:blanks] + found["heredoc"]


def _errors(root: Any) -> Iterator[Any]:
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "ERROR" or node.is_missing:
            yield node
        stack.extend(reversed(node.children))


def _bash_takes(node: Any) -> bool:
    """An error of the grammar's, not of the script: a command of assignments and redirects
    only (`OUT=$(X=$(cmd) 2>&1)`, `X=1 >log`), which bash runs, is read with a command name
    missing. The rest of its tree is sound."""
    parent = node.parent
    command = parent.parent if parent is not None else None
    return (
        node.is_missing
        and node.type == "word"
        and parent.type == "command_name"
        and command is not None
        and command.type == "command"
        and any(child.type == "variable_assignment" for child in command.children)
    )


def shell_hits(
    fragment: Fragment, file_text: str, *, edit_only_if_clean: bool = False
) -> Iterator[Hit]:
    """Every idiom occurrence in the fragment, in file offsets. `edit_only_if_clean`: where the
    grammar had to recover from an error (shell inside another syntax, a Makefile recipe line),
    the hits carry no span to edit, so such a use gets a marker, never an edit."""
    data = fragment.text.encode("utf-8")
    tree = _parser().parse(data)
    if edit_only_if_clean and tree.root_node.has_error:
        fragment = fragment._replace(exact=False)
    yield from _hits(fragment, file_text, data, tree)


def _hits(
    fragment: Fragment, file_text: str, data: bytes, tree: Any, only: list[Any] | None = None
) -> Iterator[Hit]:
    """The hits of the tree, or of the statements `only` (the variables the whole script
    reads are still read from all of it)."""
    reader = _Reader(fragment, file_text, data, _char_index(fragment.text, data), tree.root_node)
    for node in [tree.root_node] if only is None else only:
        yield from reader.walk(node)


class _Reader:
    def __init__(
        self,
        fragment: Fragment,
        file_text: str,
        data: bytes,
        chars: Callable[[int], int],
        root: Any,
    ) -> None:
        self.fragment = fragment
        self.file_text = file_text
        self.data = data
        self.chars = chars
        self.root = root
        self._reads: set[str] | None = None

    # -- positions ---------------------------------------------------------------------------

    def pos(self, byte: int) -> int:
        return self.fragment.to_file(self.chars(byte))

    def raw(self, node: Any) -> str:
        return str(self.data[node.start_byte : node.end_byte].decode("utf-8", "replace"))

    def hit(
        self,
        idiom: str,
        detail: str,
        node: Any,
        statement: Any,
        *,
        drop: tuple[int, int] | None = None,
        name: Any = None,
        note: str = "",
        group_size: int = 1,
        value: str | None = None,
        unset: bool = False,
    ) -> Hit:
        fragment = self.fragment
        whole = self.line_drop(statement) if group_size > 1 else None
        group = (self.pos(whole[0]), self.pos(whole[1])) if whole else None
        if fragment.marker_at is not None:
            marker_at: int | None = fragment.marker_at
            indent = fragment.marker_indent
        else:
            marker_at = line_start(self.file_text, self.pos(statement.start_byte))
            indent = indent_at(self.file_text, marker_at)
        exact = fragment.exact
        return Hit(
            idiom,
            detail,
            self.pos(node.start_byte),
            self.pos(node.end_byte),
            marker_at,
            indent,
            drop=(self.pos(drop[0]), self.pos(drop[1])) if drop and exact else None,  # bytes
            name=(self.pos(name.start_byte), self.pos(name.end_byte)) if name and exact else None,
            note=note,
            group_key=self.pos(statement.start_byte),
            group_size=group_size,
            group=group if group and exact else None,
            value=value,
            unset=unset,
        )

    def line_drop(self, node: Any) -> tuple[int, int] | None:
        """The lines `node` fills alone, in fragment bytes (a line break is one byte, and the
        blanks around the node too, so the span is found in bytes)."""
        data = self.data
        first = data.rfind(b"\n", 0, node.start_byte) + 1
        if data[first : node.start_byte].strip():
            return None
        stop = data.find(b"\n", node.end_byte)
        stop = len(data) if stop < 0 else stop + 1
        if data[node.end_byte : stop].strip():
            return None
        return first, stop

    def word_drop(self, node: Any) -> tuple[int, int]:
        """The node and the blanks after it (a prefix assignment, an `env` argument)."""
        end = node.end_byte
        while end < len(self.data) and self.data[end : end + 1] in (b" ", b"\t"):
            end += 1
        if self.data[end : end + 2] == b"\\\n":  # `VAR=1 \` on a line of its own
            end += 2
            while end < len(self.data) and self.data[end : end + 1] in (b" ", b"\t"):
                end += 1
        return node.start_byte, end

    def spaced_drop(self, node: Any) -> tuple[int, int]:
        """The node and the blanks before it (one of several names after `export`)."""
        start = node.start_byte
        while start > 0 and self.data[start - 1 : start] in (b" ", b"\t"):
            start -= 1
        return start, node.end_byte

    # -- the tree ----------------------------------------------------------------------------

    @property
    def read_names(self) -> set[str]:
        """Names read anywhere ($NAME, ${NAME...}): a variable some code reads is not dropped.
        Found on first use: most scripts set nothing a rule drops."""
        if self._reads is None:
            self._reads = set()
            self._collect_reads(self.root)
        return self._reads

    def _collect_reads(self, root: Any) -> None:
        stack = [root]
        while stack:
            node = stack.pop()
            if node.type in ("simple_expansion", "expansion"):
                for child in node.children:
                    if child.type == "variable_name":
                        self._reads.add(self.raw(child))  # type: ignore[union-attr]
            stack.extend(node.children)

    def walk(self, root: Any) -> Iterator[Hit]:
        stack = [root]
        while stack:
            node = stack.pop()
            kind = node.type
            if kind in _SKIP_NODES:
                continue
            if kind == "declaration_command":
                yield from self.declaration(node)
            elif kind == "unset_command":
                yield from self.unset(node)
            elif kind == "command":
                yield from self.command(node)
            elif (
                kind == "variable_assignment"
                and node.parent is not None
                and (node.parent.type not in ("declaration_command", "command"))
            ):
                yield from self.assignment(node, node, plain=True)
            if kind in _STRING_NODES:
                yield from self.strings(node)
                continue
            stack.extend(reversed(node.children))

    def strings(self, node: Any) -> Iterator[Hit]:
        """Instance types and DLAMI environments named in words and strings."""
        text = self.raw(node)
        statement = _statement(node)
        command = node.parent
        while command is not None and command.type != "command":
            command = command.parent
        if command is not None and _command_name(self, command) in _MESSAGES:
            return  # a message to a person (`echo "needs a trn1.32xlarge"`), not a setting
        for pattern, idiom in ((INSTANCE_TYPE, "instance-type"), (VENV, "venv")):
            for found in pattern.finditer(text):
                start = node.start_byte + len(text[: found.start()].encode("utf-8"))
                end = node.start_byte + len(text[: found.end()].encode("utf-8"))
                detail = found.group(1) if idiom == "instance-type" else found.group(0)
                yield self.hit(idiom, detail, _Span(start, end), statement)

    def declaration(self, node: Any) -> Iterator[Hit]:
        keyword = node.children[0].type if node.children else ""
        flags = [self.raw(c) for c in node.children if c.type == "word"]
        exported = keyword == "export" or (
            keyword in ("declare", "typeset") and any(f.startswith("-") and "x" in f for f in flags)
        )
        if not exported:
            return  # a shell variable (`local`, `readonly`, plain `declare`): not the environment
        names = [c for c in node.children if c.type in ("variable_assignment", "variable_name")]
        for child in names:
            drop = self.line_drop(node) if len(names) == 1 else self.spaced_drop(child)
            yield from self.assignment(child, node, drop=drop, group_size=len(names))

    def assignment(
        self,
        node: Any,
        statement: Any,
        *,
        drop: tuple[int, int] | None = None,
        plain: bool = False,
        group_size: int = 1,
    ) -> Iterator[Hit]:
        name = node if node.type == "variable_name" else node.child_by_field_name("name")
        if name is None:
            return
        variable = self.raw(name)
        if plain:
            drop = self.line_drop(statement)
        if drop is not None and variable in self.read_names:
            drop = None  # the script reads it later: removing it changes what runs
        yield self.hit(
            "env-var",
            variable,
            node,
            statement,
            drop=drop,
            name=name,
            group_size=group_size,
            value=self.assigned(node),
        )

    def assigned(self, node: Any) -> str | None:
        """The value `K=value` writes out (`export K=0`: "0"; `K=` : ""), None where it is
        not written or expands something (`export K`, `K=$OTHER`)."""
        if node.type != "variable_assignment":
            return None
        value = node.child_by_field_name("value")
        return "" if value is None else _literal(self, value)

    def unset(self, node: Any) -> Iterator[Hit]:
        names = [c for c in node.children if c.type == "variable_name"]
        for child in names:
            drop = self.line_drop(node) if len(names) == 1 else self.spaced_drop(child)
            yield self.hit(
                "env-var",
                self.raw(child),
                child,
                node,
                drop=drop,
                name=child,
                group_size=len(names),
                unset=True,
            )

    def command(self, node: Any) -> Iterator[Hit]:
        for child in node.children:
            if child.type == "variable_assignment":
                name = child.child_by_field_name("name")
                variable = self.raw(name) if name is not None else ""
                yield self.hit(
                    "env-var",
                    variable,
                    child,
                    node,
                    drop=self.word_drop(child),
                    name=name,
                    value=self.assigned(child),
                )
        words = [
            c
            for c in node.children
            if c.type not in ("variable_assignment", "file_redirect", "herestring_redirect")
        ]
        if words and words[0].type == "command_name":
            yield from self.argv(words, node)

    def argv(self, words: list[Any], statement: Any) -> Iterator[Hit]:
        texts = [_literal(self, w) for w in words]
        raws = [self.raw(w) for w in words]
        i = 0
        while i < len(words):
            text = texts[i]
            if text is None:
                return
            base = posixpath.basename(text)
            if base == "env":
                i += 1
                while i < len(words) and texts[i] is not None:
                    word = texts[i] or ""
                    if word in ("-u", "--unset", "-C", "--chdir", "-S"):
                        i += 2
                    elif word.startswith("-"):
                        i += 1
                    elif re.match(r"^[A-Za-z_]\w*=", word):
                        variable, _, value = word.partition("=")
                        drop = self.word_drop(words[i])
                        yield self.hit(
                            "env-var", variable, words[i], statement, drop=drop, value=value
                        )
                        i += 1
                    else:
                        break
                continue
            yield self.hit("command", base, words[i], statement)
            if base in _WRAPPERS or base == "neuron_parallel_compile":
                i = _next_launcher(texts, i + 1)
                continue
            if base == "torchrun":
                yield self.hit("torchrun", base, words[i], statement, note=_nproc(raws[i + 1 :]))
                return
            if base in ("pip", "pip3") or (
                _PYTHON.match(base)
                and texts[i + 1 : i + 3]
                == [
                    "-m",
                    "pip",
                ]
            ):
                skip = 1 if base in ("pip", "pip3") else 3
                yield from self.pip(words, texts, raws, i + skip, statement)
                return
            if _PYTHON.match(base):
                yield from self.python(words, texts, raws, i + 1, statement)
            return

    def pip(
        self, words: list[Any], texts: list[str | None], raws: list[str], i: int, statement: Any
    ) -> Iterator[Hit]:
        """The requirements of a `pip install` line."""
        if i >= len(words) or texts[i] != "install":
            return
        i += 1
        while i < len(words):
            text = texts[i]
            if text is None:
                i += 1
            elif text in _PIP_VALUE_OPTIONS:
                i += 2
            elif text.startswith("-"):
                i += 1
            else:
                yield from self.requirement(text, raws[i], words[i], statement)
                i += 1

    def requirement(self, text: str, raw: str, word: Any, statement: Any) -> Iterator[Hit]:
        from packaging.requirements import InvalidRequirement, Requirement

        if "/" in text or text.startswith("."):
            return  # a path, a URL or a wheel file
        try:
            requirement = Requirement(text)
        except InvalidRequirement:
            return
        hit = self.hit("package", canonical_name(requirement.name), word, statement)
        spec = str(requirement.specifier)
        version = None
        found = re.search(r"(~=|==|!=|<=|>=|<|>|===)[^;]*", text.split(";", 1)[0])
        if found is not None and raw == text and hit.name is None and self.fragment.exact:
            start = hit.start + found.start()
            version = (start, start + len(found.group(0).rstrip()))
        yield hit._replace(note=spec, name=version)

    def python(
        self, words: list[Any], texts: list[str | None], raws: list[str], i: int, statement: Any
    ) -> Iterator[Hit]:
        while i < len(words):
            text = texts[i]
            if text is None:
                return
            if text == "-m" and i + 1 < len(words) and texts[i + 1]:
                module = texts[i + 1] or ""
                yield self.hit("python-module", module, words[i + 1], statement)
                if module in _TORCHRUN_MODULES:
                    note = _nproc(raws[i + 2 :])
                    yield self.hit("torchrun", module, words[i + 1], statement, note=note)
                return
            if text in _PYTHON_VALUE_OPTIONS:
                i += 2
            elif text.startswith("-"):
                i += 1
            else:
                return


class _Span(NamedTuple):
    """A sub-range of a node, shaped like a node for `_Reader.hit`."""

    start_byte: int
    end_byte: int


def _statement(node: Any) -> Any:
    """The nearest enclosing command-like node: where a marker goes above."""
    current = node
    while current.parent is not None and current.parent.type not in (
        "program",
        "list",
        "pipeline",
        "compound_statement",
        "do_group",
        "if_statement",
        "else_clause",
        "elif_clause",
        "case_item",
        "subshell",
        "function_definition",
    ):
        current = current.parent
    return current


def _command_name(reader: _Reader, command: Any) -> str:
    name = command.child_by_field_name("name")
    return reader.raw(name) if name is not None else ""


def _literal(reader: _Reader, node: Any) -> str | None:
    """The word's value when it has no expansion in it; None otherwise."""
    if node.type == "command_name" and node.children:
        node = node.children[0]
    text = reader.raw(node)
    if node.type in ("word", "number"):
        return text.replace("\\", "") if "$" not in text else None
    if node.type == "raw_string":
        return text[1:-1]
    if node.type == "string" and all(c.type in ('"', "string_content") for c in node.children):
        return text[1:-1]
    if node.type == "concatenation" and "$" not in text:
        return text.replace('"', "").replace("'", "")
    return None


def _next_launcher(texts: list[str | None], i: int) -> int:
    """The index of the command a wrapper runs: its own options are passed over."""
    while i < len(texts):
        text = texts[i]
        if text is None:
            return len(texts)
        base = posixpath.basename(text)
        if not text.startswith("-") and (
            base in ("torchrun", "env", "neuron_parallel_compile")
            or _PYTHON.match(base)
            or base in _WRAPPERS
        ):
            return i
        i += 1
    return i


def _nproc(raws: list[str]) -> str:
    """`--nproc_per_node=N` as written, or a note that it is not given."""
    for i, text in enumerate(raws):
        found = _NPROC.match(text)
        if found is None:
            continue
        value = found["value"]
        if value is None:
            value = raws[i + 1] if i + 1 < len(raws) else "?"
        return f"--nproc_per_node={value}"
    return "--nproc_per_node not given (torchrun starts 1 process)"
