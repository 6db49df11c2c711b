"""A line too long to parse cheaply (`codemod.long_lines`): a statement with such a line that
holds a site is refused from the module's proxy, without the module's whole tree, and for the
same reason as from the module itself; every other module is analysed whole, as before, and a
long line without a site is neither refused nor changed."""

from __future__ import annotations

import ast
from collections.abc import Callable

import pytest

from neuron_migrate.rewrite.codemod import engine
from neuron_migrate.rewrite.codemod.engine import SourceRewrite, rewrite_source
from neuron_migrate.rewrite.codemod.long_lines import long_line_proxy
from neuron_migrate.rewrite.codemod.results import StatementTooLarge

HEADER = "import torch\nimport torch_xla.core.xla_model as xm\n"
SITE = "\ndef step(x):\n    xm.mark_step()\n    return x.to(xm.xla_device())\n"
LIMIT = 20_000


def calls(call: str) -> str:
    """`call` repeated, comma-separated, over 25,000 characters."""
    return ", ".join([call] * (25_000 // len(call) + 1))


def outcome(source: str, **kwargs: object) -> SourceRewrite | str:
    """The rewrite of `source`, or the kind and text of the error it raises."""
    try:
        return rewrite_source(source, **kwargs)  # type: ignore[arg-type]
    except (StatementTooLarge, SyntaxError) as exc:
        return f"{type(exc).__name__}: {exc}"


@pytest.fixture(autouse=True)
def limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NEURON_MIGRATE_MAX_STATEMENT", str(LIMIT))


@pytest.fixture
def parsed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every text `ast.parse` is given."""
    texts: list[str] = []
    parse = ast.parse

    def recording(source: str, *args: object, **kwargs: object) -> ast.AST:
        texts.append(source)
        return parse(source, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ast, "parse", recording)
    return texts


@pytest.fixture
def whole(monkeypatch: pytest.MonkeyPatch) -> Callable[..., SourceRewrite | str]:
    """The outcome with no proxy: the module analysed whole, as before the proxy."""

    def run(source: str, **kwargs: object) -> SourceRewrite | str:
        with monkeypatch.context() as patched:
            patched.setattr(engine, "long_line_proxy", lambda *args: None)
            return outcome(source, **kwargs)

    return run


REFUSED = {
    "calls": HEADER + f"x = [{calls('xm.xla_device()')}]\n",
    "a site after plain calls": HEADER + f"x = [{calls('f()')}, xm.xla_device()]\n",
    "a site in each row of a table": HEADER
    + f"x = [{calls('torch.ones(3, device=xm.xla_device())')}]\n",
    "numbers beside a site": HEADER + f"x = ([{calls('1.5')}], xm.xla_device())\n",
    "a dict": HEADER + "x = {" + calls("1: xm.xla_device()") + "}\n",
    "two statements on the line": HEADER + f"a = 1; x = [{calls('xm.xla_device()')}]\n",
    "a statement of several lines": HEADER
    + f"x = foo(\n    1,\n    [{calls('xm.xla_device()')}],\n    2,\n)\n",
    "in a function": HEADER + f"def f():\n    return [{calls('xm.xla_device()')}]\n",
}


@pytest.mark.parametrize("source", REFUSED.values(), ids=REFUSED.keys())
def test_a_long_line_with_a_site_is_refused_from_the_proxy(
    source: str, parsed: list[str], whole: Callable[..., SourceRewrite | str]
) -> None:
    found = outcome(source)
    assert isinstance(found, str) and found.startswith("StatementTooLarge: ")
    assert source not in parsed  # nor in any other piece of text as long as the line
    assert max(len(text.replace(" ", "")) for text in parsed) < LIMIT
    assert found == whole(source)  # the same line, size and limit


def test_the_proxy_blanks_repeats_and_elements_without_names() -> None:
    line = "x = [a, b, a, 1, 'q', f'{c}', (1, 2), b" + ", b" * 20 + "]"
    proxy = long_line_proxy(line + "\n", 10)
    assert proxy is not None
    assert proxy.text == "x = [a, b,            f'{c}'," + " " * 70 + "]\n"
    assert len(proxy.text) == len(line) + 1
    # Calls and subscripts keep their arguments; a bracket that starts a statement is a display.
    proxy = long_line_proxy("import m as n\n[a" + ", a" * 9 + "] = f(a, a)[a, a]\n", 10)
    assert (
        proxy is not None and proxy.text == "import m as n\n[a," + " " * 26 + "] = f(a, a)[a, a]\n"
    )
    # A line mostly left as it was is not worth a proxy.
    assert long_line_proxy("x = [a, b, c, d, e, 1]\n", 10) is None


LEFT_WHOLE = {
    "a string": HEADER + "s = '" + "a" * (2 * LIMIT) + "'\n" + SITE,
    "a table of numbers": HEADER + f"t = [{calls('(1.5, -2)')}]\n" + SITE,
    "plain calls": HEADER + f"c = [{calls('foo(1)')}]\n" + SITE,
    "calls of a torch API that is no site": HEADER + f"c = [{calls('torch.zeros(4)')}]\n" + SITE,
}


@pytest.mark.parametrize("source", LEFT_WHOLE.values(), ids=LEFT_WHOLE.keys())
def test_a_long_line_without_a_site_is_not_refused_or_changed(
    source: str, whole: Callable[..., SourceRewrite | str]
) -> None:
    result = outcome(source)
    assert isinstance(result, SourceRewrite), result
    long_line = source.split("\n")[2]
    assert len(long_line) > LIMIT
    assert long_line in result.new.split("\n")
    assert result.count("rewritten") == 2  # the function's sites
    assert result == whole(source)


UNREAD = {
    # An element blanked from the proxy that does not parse: the module's own error.
    "a syntax error in a blanked element": HEADER + f"x = [xm.xla_device(), {calls('1 2')}]\n",
    # A target: `[a, 1] = b` does not parse, and a blanked name would not be bound.
    "a target that does not parse": HEADER + f"[a, {calls('1')}] = [xm.xla_device()]\n",
    "a target": HEADER + f"[{calls('a')}] = xm.xla_device()\n",
    # Names bound in the line by something else than a repeat are kept.
    "a name bound in the line": HEADER + f"x = [xm.xla_device(), (xm := 3), {calls('xm.a()')}]\n",
    "an import": HEADER + f"from torch_xla import (core, {calls('1')})\n",
    "a pattern": HEADER + f"match y:\n    case ([z, z], 1): x = [{calls('xm.xla_device()')}]\n",
    "a comprehension": HEADER + f"x = [[xm.xla_device(), {calls('1')}] for xm in y]\n",
    "a lambda": HEADER + f"x = [lambda xm, q: 0, {calls('xm.xla_device()')}]\n",
}


@pytest.mark.parametrize("source", UNREAD.values(), ids=UNREAD.keys())
def test_other_long_lines_have_the_outcome_of_the_whole_module(
    source: str, whole: Callable[..., SourceRewrite | str]
) -> None:
    assert outcome(source) == whole(source)


def test_a_syntax_error_in_a_blanked_element_is_the_module_s(
    whole: Callable[..., SourceRewrite | str],
) -> None:
    found = outcome(UNREAD["a syntax error in a blanked element"])
    assert isinstance(found, str) and found.startswith("SyntaxError")


def test_one_line_s_quick_fix_is_refused_as_before(
    whole: Callable[..., SourceRewrite | str],
) -> None:
    source = REFUSED["calls"] + SITE
    for line in (3, 6):
        assert outcome(source, line=line) == whole(source, line=line)
