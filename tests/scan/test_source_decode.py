"""Decoding as Python does: the shortcut for files that name no encoding gives what
`tokenize.detect_encoding` gives, errors included."""

from __future__ import annotations

import pytest

from neuron_migrate.project import source
from neuron_migrate.project.source import decode

SAMPLES = [
    b"",
    b"x = 1",
    b"x = 1\n",
    b"x = 1\r\ny = 2\r\n",
    b"name = '\xc3\xa9t\xc3\xa9'\n",  # UTF-8
    b"name = '\xe9t\xe9'\n",  # latin-1 bytes, no cookie: not valid UTF-8
    b"# -*- coding: latin-1 -*-\nname = '\xe9t\xe9'\n",
    b"#!/usr/bin/env python\n# coding=latin-1\nname = '\xe9'\n",
    b"\n# vim: set fileencoding=utf-8 :\nx = 1\n",
    b"x = 1\n# coding: latin-1\nname = '\xe9'\n",  # a cookie on line 2 after code: not one
    b"a = 1\nb = 2\n# coding: latin-1\nname = '\xe9'\n",  # on line 3: not one
    b"# coding: nonesuch\nx = 1\n",
    b"\xef\xbb\xbfx = 1\n",  # BOM
    b"\xef\xbb\xbf# coding: latin-1\nx = 1\n",  # BOM and another encoding
    b"x = '\xe9'\n# coding: latin-1\n",  # an invalid first line
    b"x = 1\rname = '\xe9'\r",  # old Mac line ends
    b"coding = 1\nprint(coding)\n",  # the word, not a cookie
    b"import torch\x00\n",
]


@pytest.mark.parametrize("data", SAMPLES)
def test_the_shortcut_decodes_as_the_tokenizer_does(
    data: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast = decode(data, "m.py")
    monkeypatch.setattr(source, "_says_no_encoding", lambda data: False)
    assert fast == decode(data, "m.py")


def test_the_shortcut_is_taken_only_where_no_encoding_can_be_named() -> None:
    assert source._says_no_encoding(b"import torch\nx = 1\n# coding: latin-1\n")
    assert not source._says_no_encoding(b"import torch\n# coding: latin-1\n")
    assert not source._says_no_encoding(b"\xef\xbb\xbfimport torch\n")
