"""Dockerfiles: `FROM` images, `ENV` / `ARG` variables, and `RUN` / `CMD` / `ENTRYPOINT` shell.

Docker's own syntax is line-based (instructions, `\\` continuations, comment lines, heredocs), so
it is read here directly; the shell inside each instruction goes to the bash grammar with its
exact offsets, so a fix inside a `RUN` edits the Dockerfile in place.
"""

import re
from collections.abc import Iterator
from typing import NamedTuple

from neuron_migrate.project_files.hits import Hit, ReaderError, indent_at, whole_lines
from neuron_migrate.project_files.shell import INSTANCE_TYPE, VENV, Fragment, shell_hits

_INSTRUCTION = re.compile(r"^[ \t]*(?P<word>[A-Za-z]+)(?P<gap>[ \t]+|$)")
_HEREDOC = re.compile(r"<<-?(?P<quote>[\"']?)(?P<word>[A-Za-z_][\w]*)(?P=quote)")
_READS = re.compile(r"\$\{?([A-Za-z_]\w*)")
_CONTINUED = re.compile(r"[ \t]*(\r?\n|\r)")
_BLANKS_AFTER_BACKSLASH = re.compile(r"\\([ \t]+)(\r?\n)")
_SHELL_INSTRUCTIONS = frozenset({"RUN", "CMD", "ENTRYPOINT"})
_INSTRUCTIONS = frozenset(
    {
        *_SHELL_INSTRUCTIONS,
        *("FROM", "LABEL", "MAINTAINER", "EXPOSE", "ENV", "ADD", "COPY", "VOLUME", "USER"),
        *("WORKDIR", "ARG", "ONBUILD", "STOPSIGNAL", "HEALTHCHECK", "SHELL"),
    }
)


class DockerfileError(ReaderError):
    """Not a Dockerfile this reader understands; the message is one line."""


class Instruction(NamedTuple):
    word: str  # upper case
    start: int  # the instruction's first character (after indentation)
    args_start: int  # its arguments
    end: int  # the end of its last line (before the newline), heredoc bodies excluded
    heredocs: tuple[tuple[int, int], ...]  # (start, end) of each heredoc body


def instructions(text: str) -> Iterator[Instruction]:
    lines = text.splitlines(keepends=True)
    offset = 0
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            offset += len(line)
            i += 1
            continue
        found = _INSTRUCTION.match(line)
        if found is None or found["word"].upper() not in _INSTRUCTIONS:
            raise DockerfileError(f"not a Dockerfile instruction at line {i + 1}")
        start = offset + len(line) - len(line.lstrip(" \t"))
        args_start = offset + found.end()
        # Continuations: a line ending in a backslash goes on; comment lines inside are skipped.
        end_line = i
        # BuildKit takes blanks after the backslash too.
        while lines[end_line].rstrip().endswith("\\") and end_line + 1 < len(lines):
            end_line += 1
            while end_line + 1 < len(lines) and lines[end_line].lstrip().startswith("#"):
                end_line += 1
        body_end = offset + sum(len(x) for x in lines[i : end_line + 1])
        end = body_end - len(lines[end_line]) + len(lines[end_line].rstrip("\r\n"))
        heredocs = []
        next_line = end_line + 1
        next_offset = body_end
        for tag in _HEREDOC.finditer(text[args_start:end]):
            body_start = next_offset
            while next_line < len(lines) and lines[next_line].strip() != tag["word"]:
                next_offset += len(lines[next_line])
                next_line += 1
            if next_line >= len(lines):
                raise DockerfileError(f"heredoc {tag['word']} is not closed (line {i + 1})")
            heredocs.append((body_start, next_offset))
            next_offset += len(lines[next_line])
            next_line += 1
        yield Instruction(found["word"].upper(), start, args_start, end, tuple(heredocs))
        offset = next_offset
        i = next_line


class _Token(NamedTuple):
    start: int
    end: int
    value: str  # unquoted


def tokens(text: str, start: int, end: int) -> list[_Token]:
    """Whitespace-separated words of an ENV / ARG line, with quotes and escapes honoured."""
    found: list[_Token] = []
    i = start
    while i < end:
        char = text[i]
        if char in " \t\r\n" or (char == "\\" and _line_break_after(text, i + 1)):
            i += 1
            continue
        word_start = i
        value = []
        quote = ""
        while i < end:
            char = text[i]
            if quote:
                if char == quote:
                    quote = ""
                elif char == "\\" and quote == '"' and i + 1 < end:
                    i += 1
                    value.append(text[i])
                else:
                    value.append(char)
            elif char in "\"'":
                quote = char
            elif char == "\\" and i + 1 < end and not _line_break_after(text, i + 1):
                i += 1
                value.append(text[i])
            elif char in " \t\r\n" or char == "\\":
                break
            else:
                value.append(char)
            i += 1
        if quote:
            raise DockerfileError("unterminated quote in ENV/ARG")
        found.append(_Token(word_start, i, "".join(value)))
    return found


def dockerfile_hits(text: str) -> Iterator[Hit]:
    reads = set(_READS.findall(text))
    for ins in instructions(text):
        marker_at = _line_start(text, ins.start)
        indent = indent_at(text, marker_at)
        if ins.word == "FROM":
            words = [
                t for t in tokens(text, ins.args_start, ins.end) if not t.value.startswith("--")
            ]
            if words:
                image = words[0]
                yield Hit("image", image.value, image.start, image.end, marker_at, indent)
        elif ins.word in ("ENV", "ARG"):
            yield from _variables(text, ins, reads, marker_at, indent)
        elif ins.word in _SHELL_INSTRUCTIONS:
            args = text[ins.args_start : ins.end]
            if args.lstrip().startswith("["):  # exec form: a JSON list, no shell
                yield from _exec_form(args, ins.args_start, text, marker_at, indent)
                yield from _instance_types(text, ins.args_start, ins.end, marker_at, indent)
            else:
                yield from _shell(text, ins.args_start, ins.end, marker_at, indent)
            for body_start, body_end in ins.heredocs:
                yield from _shell(text, body_start, body_end, marker_at, indent)
        else:
            yield from _instance_types(text, ins.args_start, ins.end, marker_at, indent)


def _line_start(text: str, offset: int) -> int:
    return text.rfind("\n", 0, offset) + 1


def _line_break_after(text: str, at: int) -> bool:
    """Only blanks, then a line break, from `at`: a `\\` before it continues the line."""
    return _CONTINUED.match(text, at) is not None


def _shell(text: str, start: int, end: int, marker_at: int, indent: str) -> Iterator[Hit]:
    # A continuation's blanks go before its backslash, for bash to read it as one (the length,
    # and so every offset, stays): the fragment is then no longer the file's own text.
    shell = _BLANKS_AFTER_BACKSLASH.sub(r"\1\\\2", text[start:end])
    exact = shell == text[start:end]
    fragment = Fragment(shell, lambda o: o + start, exact, marker_at, indent)
    yield from shell_hits(fragment, text)


def _exec_form(args: str, start: int, text: str, marker_at: int, indent: str) -> Iterator[Hit]:
    """`CMD ["torchrun", ...]`: the list read as one command (positions: the instruction's)."""
    import json
    import shlex

    try:
        argv = json.loads(args)
    except ValueError:
        return
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        return
    if len(argv) >= 3 and argv[-2] == "-c":  # ["bash", "-c", SCRIPT]
        script = argv[-1]
    else:
        script = " ".join(shlex.quote(a) for a in argv)
    fragment = Fragment(script, lambda o: start, False, marker_at, indent)
    yield from shell_hits(fragment, text)


def _instance_types(text: str, start: int, end: int, marker_at: int, indent: str) -> Iterator[Hit]:
    """Instance types and DLAMI environments named anywhere in an instruction's arguments."""
    for found in INSTANCE_TYPE.finditer(text, start, end):
        yield Hit("instance-type", found[1], found.start(), found.end(), marker_at, indent)
    for found in VENV.finditer(text, start, end):
        yield Hit("venv", found[0], found.start(), found.end(), marker_at, indent)


def _variables(
    text: str, ins: Instruction, reads: set[str], marker_at: int, indent: str
) -> Iterator[Hit]:
    words = tokens(text, ins.args_start, ins.end)
    if not words:
        return
    legacy = "=" not in text[words[0].start : words[0].end] and ins.word == "ENV"
    if legacy:
        # The legacy form `ENV NAME value with spaces`: one variable, the rest is its value.
        pairs = [(words[0], words[0].value)]
    else:
        pairs = [(w, w.value.partition("=")[0]) for w in words]
    whole = whole_lines(text, ins.start, ins.end)
    for word, variable in pairs:
        if len(pairs) == 1:
            drop = whole
        elif word is pairs[0][0]:
            drop = (word.start, pairs[1][0].start)
        else:
            drop = (_blank_before(text, word.start), word.end)
        if variable in reads:
            drop = None
        name = (
            (word.start, word.start + len(variable))
            if text.startswith(variable, word.start)
            else None
        )
        if legacy:
            written: str | None = " ".join(w.value for w in words[1:])
        else:
            written = word.value.partition("=")[2] if "=" in word.value else None  # `ARG K`
        yield Hit(
            "env-var",
            variable,
            word.start,
            word.end,
            marker_at,
            indent,
            drop,
            name,
            group_key=ins.start,
            group_size=len(pairs),
            group=whole,
            value=None if written is None or "$" in written else written,
        )
        value = word.value.partition("=")[2]
        if ins.word == "ARG" and "/" in value and ":" in value:
            image_start = text.find(value, word.start, word.end)
            if image_start >= 0:
                yield Hit("image", value, image_start, image_start + len(value), marker_at, indent)
    yield from _instance_types(text, ins.args_start, ins.end, marker_at, indent)


def _blank_before(text: str, start: int) -> int:
    """Back over the blanks (and `\\` line breaks) before a word."""
    while start > 0:
        if text[start - 1] in " \t":
            start -= 1
        elif text[start - 1] == "\n" and text[start - 2 : start - 1] == "\\":
            start -= 2
        else:
            break
    return start
