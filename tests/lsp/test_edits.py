"""A rewrite as LSP text edits: applied as a client applies them, they give the rewrite."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("lsprotocol")

from neuron_migrate.lsp.edits import apply, hunks, split_lines
from neuron_migrate.lsp.protocol import Lines, text_edits, units_of


def client_apply(text: str, edits: list, encoding: str) -> str:
    """Edits applied as the protocol defines positions: lines end at \\n, \\r\\n or \\r, and
    a character offset counts units of `encoding`; edits of one request do not overlap. Every
    position must lie in the document, on a character boundary."""
    starts = [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", text)]
    codec, width = {"utf-16": ("utf-16-le", 2), "utf-8": ("utf-8", 1), "utf-32": ("utf-32-le", 4)}[
        encoding
    ]

    def offset(position) -> int:
        assert position.line < len(starts), "a position past the document's end"
        start = starts[position.line]
        end = starts[position.line + 1] if position.line + 1 < len(starts) else len(text)
        line = text[start:end].rstrip("\r\n")
        units = 0
        for at, char in enumerate(line):
            if units >= position.character:
                assert units == position.character, "a position inside a character"
                return start + at
            units += len(char.encode(codec)) // width
        assert units == position.character, "a position past the line's end"
        return start + len(line)

    spans = sorted(
        ((offset(e.range.start), offset(e.range.end), e.new_text) for e in edits), reverse=True
    )
    for start, end, new in spans:
        text = text[:start] + new + text[end:]
    return text


pieces = st.lists(
    st.sampled_from(["a", "xm.mark_step()", "🚀", "é", " ", "\n", "\r\n", "\r", "\x0c", "\n\n"]),
    max_size=30,
).map("".join)


def test_lines_end_where_the_protocol_ends_them() -> None:
    assert split_lines("a\r\nb\rc\x0cd\ne") == ["a\r\n", "b\r", "c\x0cd\n", "e"]


@given(pieces, pieces, st.sampled_from(["utf-16", "utf-8", "utf-32"]))
def test_the_edits_make_the_new_text(old: str, new: str, encoding: str) -> None:
    found = hunks(old, new)
    assert apply(old, found) == new
    edits = text_edits(found, Lines(split_lines(old), units_of(encoding)))
    assert client_apply(old, edits, encoding) == new
