"""The outlined rewrite against the whole-tree one.

`rewrite_source` parses with libcst only the statements that hold a site (`outline.py`,
`skeleton.py`), enters only the nodes that can matter (`passes.py`) and copies the statements
it did not change (`output.py`). The reference runs the same passes over the module parsed
whole, entering every node, and prints it whole: both must give the same bytes and outcomes.
"""

from __future__ import annotations

import ast
from contextlib import contextmanager
from pathlib import Path
from unittest import mock

import libcst as cst
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from libcst.metadata import MetadataWrapper, PositionProvider

from neuron_migrate.rewrite.codemod import engine, skeleton, trim
from neuron_migrate.rewrite.codemod.engine import rewrite_source
from neuron_migrate.rewrite.codemod.passes import INERT
from neuron_migrate.rewrite.codemod.positions import printed
from neuron_migrate.rewrite.codemod.sites_index import SiteIndex
from neuron_migrate.rewrite.codemod.spansets import SourceText, SpanSet
from neuron_migrate.ruleset import load_ruleset
from neuron_migrate.scan.analyzer.sites import find_sites

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
SOURCES = sorted(FIXTURES.glob("**/*.py"))

HEADER = "import torch\nimport torch_xla\nimport torch_xla.core.xla_model as xm\n"

# Layouts the outline has to get exactly right: where comments and blank lines belong, what a
# deleted statement hands on, blocks left empty, headers, decorators, the end of the file.
LAYOUTS = {
    "top-level step context": HEADER
    + "\nwith torch_xla.step():\n    x = torch.ones(2)\n    if x.sum() > 0:\n"
    "        y = x * 2\n    # after\nprint(x)\n",
    "deleted before a cut statement": HEADER + "\n\ndef train(model):\n    loss = model()\n"
    "    # step\n    xm.mark_step()  # sync\n    # about the next line\n\n    total = loss * 2\n"
    "    return total\n",
    "deleted last, deeper comments after": HEADER + "\n\ndef f():\n    for i in range(3):\n"
    "        g(i)\n        xm.mark_step()\n            # deeper\n        # same\n    # outer\n"
    "\n# top\nx = 1\n",
    "block left empty": HEADER + "\n\ndef f():\n    # only a step\n    xm.mark_step()\n\n\n"
    "def g():\n    pass\n",
    "decorators": HEADER + "\n\n@decorate(1)\n# between\n@decorate(\n    2,\n)\ndef cut():\n"
    "    return 1\n\n\n@decorate(xm.xla_device())\ndef header_site():\n    return 2\n\n\n"
    "@decorate\ndef body_site(a,  # a\n             b):  # after the colon\n"
    "    # first\n    d = xm.xla_device()\n    return a + b\n",
    "if elif else": HEADER + "\n\ndef f(flag):\n    if flag == 1:\n        a = 1\n"
    "    # before elif\n    elif flag == 2:\n        xm.mark_step()\n    else:\n"
    "        # in else\n        d = xm.xla_device()\n    if xm.is_master_ordinal():\n"
    "        print('master')\n    else:\n        pass\n",
    "a try left with nothing to do on either side": HEADER
    + "\n\ndef f(a):\n    try:\n        xm.mark_step()\n    except ImportError:\n"
    "        pass\n",
    "guarded import": "import torch\ntry:\n    import torch_xla.core.xla_model as xm\n"
    "except ImportError:  # no XLA\n    xm = None\n\n\ndef f():\n    return xm.xla_device()\n",
    "loops with else": HEADER + "\n\ndef f(n):\n    for i in range(n):\n        xm.mark_step()\n"
    "    else:\n        done = True\n    while n:\n        n -= 1\n    else:\n"
    "        d = xm.xla_device()\n",
    "class": HEADER + "\n\nclass Trainer:\n    '''Trains.'''\n\n    rate = 0.1\n\n"
    "    def __init__(self):\n        self.device = xm.xla_device()\n\n"
    "    def plain(self):\n        return self.rate\n",
    "no newline at the end": HEADER + "\n\ndef f():\n    return 1\n\n\nx = f()",
    "site at the end without newline": HEADER + "\n\ndef f():\n    return 1\n\nxm.mark_step()",
    "semicolons": HEADER + "\n\ndef f():\n    a = 1; xm.mark_step()\n    b = 2; c = 3\n"
    "    return a + b + c\n",
    "new imports and helper": '"""Docs."""\n\nimport numpy as np\n'
    "import torch_xla.core.xla_model as xm\nimport torch_xla.distributed.parallel_loader as pl\n"
    "\n\ndef f(loader):\n    dev = xm.xla_device()\n    os_env = 1\n"
    '    os.environ["XLA_USE_BF16"] = "1"\n'
    "    for batch in pl.MpDeviceLoader(loader, dev):\n        xm.mark_step()\n"
    "    return xm.all_reduce(xm.REDUCE_SUM, [a, b])\n",
    "future import first": "from __future__ import annotations\n\nimport sys\n"
    "import torch_xla.core.xla_model as xm\n\n\ndef f() -> None:\n    xm.mark_step()\n"
    '    xm.master_print("done")\n',
    "alias as a parameter": HEADER + "\n\ndef unrelated(xm):\n    # xm here is a parameter\n"
    "    return xm\n\n\ndef f():\n    xm.mark_step()\n",
    "alias in a comment only": HEADER + "\n\n# xm is used below\ndef f():\n    xm.mark_step()\n"
    "\n\n# xm again\nx = 1\n",
    "tabs": HEADER + "\n\ndef f():\n\tx = 1\n\txm.mark_step()\n\treturn x\n",
    "match": HEADER + "\n\ndef f(v):\n    match v:\n        case 1:\n"
    "            xm.mark_step()\n        case _:\n            pass\n    return v\n",
    "async and nesting": HEADER + "\n\nasync def f(items):\n    async with ctx() as c:\n"
    "        async for i in items:\n            def inner():\n                return 1\n"
    "            xm.mark_step()\n    return c\n",
    "default argument site": HEADER + "\n\ndef setup(device='xla', n=1):\n    x = 1\n"
    "    return device\n",
    "fork rng": HEADER + "\n\ndef f():\n    with xm.fork_rng():\n        a = torch.randn(2)\n"
    "    return a\n",
    "backslash": HEADER + "\n\ndef f():\n    x = 1 + \\\n        2\n    xm.mark_step()\n"
    "    return x\n",
    "carriage returns": HEADER.replace("\n", "\r\n") + "\r\ndef f():\r\n    xm.mark_step()\r\n",
    "indent of the first block": HEADER + "\n\ndef cut():\n  return 1\n\n\ndef f():\n"
    "    if True:\n        xm.mark_step()\n    return master_print_helper(\n        1)\n",
    "parenthesized imports": "import torch\nfrom torch_xla.core.xla_model import (\n"
    "    xla_device,\n    mark_step,  # the step\n)\nfrom os.path import (join)\n\n\n"
    "def f():\n    mark_step()\n    return join('a', 'b')\n",
    "some imported names go": "import torch\nfrom torch_xla.core.xla_model import (\n"
    "    xla_device,\n    mark_step,\n)\n\n\ndef f():\n"
    "    from torch_xla.core.xla_model import (\n        xla_device,\n"
    "        mark_step,  # the step\n    )\n    mark_step()\n    return g(xla_device)\n\n\n"
    "h(xla_device)\n",
    "unused after rewrite": HEADER + "import torch_xla.debug.metrics as met\n\n\ndef f():\n"
    "    xm.mark_step()\n    print(met.metrics_report())\n",
}


def _printed_whole(module: cst.Module, *args: object) -> str:
    code = module.code
    ast.parse(code)
    return code


@contextmanager
def _whole_tree():
    """Parse whole, enter every node, print whole: the codemod without its shortcuts."""
    with (
        mock.patch.object(skeleton, "_outlined", lambda *args: None),
        mock.patch.object(SpanSet, "within", lambda self, extent: True),
        mock.patch.object(engine, "printed_checked", _printed_whole),
    ):
        yield


def _both(source: str, *, unsafe: bool = False):
    fast = rewrite_source(source, unsafe=unsafe)
    with _whole_tree():
        whole = rewrite_source(source, unsafe=unsafe)
    return fast, whole


def _assert_same(source: str) -> None:
    for unsafe in (False, True):
        fast, whole = _both(source, unsafe=unsafe)
        assert fast.new == whole.new
        assert fast.outcomes == whole.outcomes


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_layout_rewrites_as_the_whole_tree_does(name: str) -> None:
    _assert_same(LAYOUTS[name])


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_fixture_rewrites_as_the_whole_tree_does(path: Path) -> None:
    _assert_same(path.read_text(encoding="utf-8"))


# Large statements' shapes (`trim.py`), each rewritten with every statement trimmed: the parts of
# displays and calls around the lines that hold a site, in every form a part takes.
TRIMMED = {
    "rows around a site": HEADER + "\nrows = [\n    (1, 'a'),\n    ('é', {'k': [1,\n 2]}),\n"
    "    dict(device='xla'),  # a site\n    *more,\n    (\n        parenthesized\n    ),\n"
    "    lambda x: x,\n    f(x for x in y),\n    'a' 'b'\n    'c',\n]\n",
    "arguments around a site's call": HEADER + "\n\ndef f(opt):\n    xm.optimizer_step(\n"
    "        opt,\n        optimizer_args={'lr': 1,\n                        'm': 2},\n    )\n"
    "    return g(\n        1,\n        *args,\n        key=[\n            3],\n"
    "        device=xm.xla_device(),\n        **{'a':\n           1},\n    )\n",
    "keys and values": HEADER + "\nconfig = {\n    'devices': ['xla',\n"
    "                'cpu'],\n    ('tuple',\n     'key'): 1,\n    **defaults,\n"
    "    'plain': {\n        'nested': 2},\n}\nconfig['x'] += [\n    1,\n    xm.xla_device(),\n"
    "    2]\n",
    # `xm` read where the site finder sees a comprehension's variable: the import pass counts
    # it as a read of the import (so does the whole tree), parsing the piece that holds it.
    "an import's name in a piece": HEADER + "\nrows = [\n    [xm for xm in\n     range(3)],\n"
    "    dict(device='xla'),\n]\n",
    # A taken guard's branch moves one block out: the pieces' continuation lines follow it, as
    # libcst's whitespace does, but for the lines inside a string.
    "pieces in a branch that moves out": "import torch\ntry:\n"
    "    import torch_xla.core.xla_model as xm\n    HAS_XLA = True\nexcept ImportError:\n"
    "    HAS_XLA = False\n\n\ndef f():\n    if HAS_XLA:\n        rows = [\n            (1,\n"
    "             # a comment\n\n             2),\n            xm.xla_device(),\n"
    "            '''text\n        inside\n            a string''',\n"
    "            ('a'\n             'b'),\n            f(1,  # one\n"
    '              x="""\n            more"""),\n        ]\n    else:\n        rows = []\n'
    "    return rows\n",
    "pieces on a site's line": HEADER + "\ndevs = [[1,\n  2], xm.xla_device(), [3,\n  4],\n"
    "        [5,\n         6]]\n",
}


@contextmanager
def _trimming_every_statement():
    """Every kept line of simple statements has its site-less parts cut out, however small."""
    with (
        mock.patch.object(trim, "LARGE_STATEMENT", 0),
        mock.patch.object(trim, "SMALLEST_PIECE", 0),
    ):
        yield


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_layout_trimmed_rewrites_as_the_whole_tree_does(name: str) -> None:
    with _trimming_every_statement():
        _assert_same(LAYOUTS[name])


@pytest.mark.parametrize("name", sorted(TRIMMED))
def test_trimmed_shape_rewrites_as_the_whole_tree_does(name: str) -> None:
    source = TRIMMED[name]
    with _trimming_every_statement():
        module = _outlined(source)
        assert module is not None
        assert printed(module).code == source
        assert any(isinstance(n, skeleton.OpaqueExpression) for n in printed(module).extents)
        _assert_same(source)
        new = rewrite_source(source).new
        assert rewrite_source(new).new == new


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_fixture_trimmed_rewrites_as_the_whole_tree_does(path: Path) -> None:
    with _trimming_every_statement():
        _assert_same(path.read_text(encoding="utf-8"))


def _table(rows: int) -> str:
    """A data table in the shape of torch's `op_db`: one statement of thousands of lines, a
    torch_xla device string in two of its rows, one a site's call."""
    lines = [HEADER, "\n", "op_db: list = [\n"]
    for row in range(rows):
        device = "'xla'" if row in (7, rows - 3) else "'cpu'"
        lines.append(
            f"    OpInfo('op{row}',\n"
            f"           dtypes=(torch.float32, torch.bfloat16),  # row {row}\n"
            f"           skips=(DecorateInfo(unittest.skip('no'), 'T', device_type={device}),\n"
            f"                  DecorateInfo(unittest.expectedFailure, 'T', 'test_{row}'),),\n"
            f"           sample_inputs_func=lambda op, d: [make(d, {{'n': {row}}})]),\n"
        )
    lines.append("    OpInfo('step', ref=xm.mark_step, device=xm.xla_device())]\n")
    return "".join(lines)


def test_large_statement_is_outlined_below_the_statement() -> None:
    """libcst parses the rows that hold a site, not the whole table (its parse costs about
    0.85 KB a character), and the rewrite is the whole tree's."""
    source = _table(400)
    module = _outlined(source)
    assert module is not None
    assert printed(module).code == source
    pieces = [n for n in printed(module).extents if isinstance(n, skeleton.OpaqueExpression)]
    assert len(pieces) > 400 - 3  # every row without a site, then parts of those with one
    tree = ast.parse(source)
    index = SiteIndex(find_sites(source, tree), load_ruleset())
    xla = SourceText(source).occurrences("torch_xla").lines()
    parsed = skeleton.outline(source, tree, index.lines(), xla).text
    assert len(parsed) < len(source) // 5  # a placeholder a row
    _assert_same(source)
    new = rewrite_source(source).new
    assert new.count("device_type='neuron'") == 2
    assert 'device=torch.device("neuron")' in new


def test_unwrapped_top_level_block_is_reindented() -> None:
    new = rewrite_source(LAYOUTS["top-level step context"]).new
    assert "\nx = torch.ones(2)\nif x.sum() > 0:\n    y = x * 2\n" in new


def _outlined(source: str) -> cst.Module | None:
    tree = ast.parse(source)
    index = SiteIndex(find_sites(source, tree), load_ruleset())
    xla = SourceText(source).occurrences("torch_xla").lines()
    return skeleton._outlined(source, tree, index.lines(), xla)


def _opaque(module: cst.Module) -> int:
    kinds = (skeleton.OpaqueStatement, skeleton.OpaqueCompound)
    return sum(1 for line in printed(module).extents if isinstance(line, kinds))


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_outlined_tree_prints_the_source(name: str) -> None:
    source = LAYOUTS[name]
    module = _outlined(source)
    if name in ("tabs", "carriage returns"):
        assert module is None  # a layout the outline leaves to the whole parse
        return
    assert module is not None
    assert printed(module).code == source
    assert _opaque(module) > 0


def test_spans_are_the_position_providers() -> None:
    """Every node but whitespace and punctuation (which no pass looks up) has libcst's span."""
    for path in SOURCES:
        module = cst.parse_module(path.read_text(encoding="utf-8"))
        expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
        spans = printed(module).spans
        for node, where in expected.items():
            if type(node) in INERT:
                continue
            span = (where.start.line, where.start.column, where.end.line, where.end.column)
            assert spans[node] == span, (path.name, type(node).__name__)


# What `recorded_printing` prints by its own functions, in the forms libcst parses them to: one
# parenthesized or spaced token, keyword and star arguments, trailing commas, continuation
# lines, triple-quoted strings, semicolons, empty blocks, every clause of `try`, `with` and `if`.
PRINTING = (
    "import torch_xla.core.xla_model as xm  # note\n\n"
    "x = (  # open\n    a  .  b (  1 ,y = 2,  *args , ** kw, )\n)\n"
    "y = ((z)) ; w = 'a' \\\n    ; v = 1.5\n"
    'doc = """two\nlines"""\n'
    "def f():\n    return\n\n\ndef g(): return (x)\n"
    "try:\n    xm.mark_step()\nexcept (ValueError, KeyError) as error:  # why\n    pass\n"
    "except Exception:\n\n    raise\nelse:\n    pass\nfinally :\n    done = True\n"
    "with a as b, c:\n    pass\nwith (\n    open(p) as f,\n    open(q) as g,\n):\n    pass\n"
    "if a:\n    pass\nelif b:  # elif\n    x = 1\nelse:\n    # only a comment\n    y = 2\n"
    "    # after\n\n# end\n"
)


def _printing_cases() -> list[tuple[str, cst.Module]]:
    sources = [
        ("printing", PRINTING),
        *((str(p.name), p.read_text(encoding="utf-8")) for p in SOURCES),
    ]
    sources += [(name, text) for name, text in LAYOUTS.items() if name != "carriage returns"]
    cases = []
    for name, source in sources:
        cases.append((name, cst.parse_module(source)))
        outlined = _outlined(source)
        if outlined is not None:
            cases.append((f"{name} (outlined)", outlined))
    return cases


def _assert_prints_as_libcst(module: cst.Module, name: str) -> None:
    """The code, spans and extents `recorded_printing` gives are those of libcst's printing."""
    ours, libcsts = printed(module), printed(module, by_libcst=True)
    assert ours.code == libcsts.code, name
    assert ours.spans == libcsts.spans, name
    assert ours.extents == libcsts.extents, name


def test_recorded_printing_is_libcsts() -> None:
    for name, module in _printing_cases():
        _assert_prints_as_libcst(module, name)


# Random layouts: statements with and without sites, in random blocks, between random
# comment and blank lines.
SIMPLE = [
    "x = compute(1)",
    "xm.mark_step()",
    "d = xm.xla_device()",
    "xm.master_print('loss', x)",
    "t = torch.ones(2, device='xla')",
    "total = xm.all_reduce(xm.REDUCE_SUM, t)",
    "print(x)  # trailing",
    "a = 1; xm.mark_step()",
    "os.environ['XLA_USE_BF16'] = '1'",
    "return x",
    "import torch_xla.core.xla_model as xm",
    "from torch_xla.core.xla_model import mark_step, xla_device",
    "import os, sys",
    "g(xla_device)",
]
HEADERS = [
    "def fn{n}(a, b=1):",
    "def fn{n}(device='xla'):",
    "@decorate\ndef fn{n}():",
    "class K{n}:",
    "if flag:",
    "for i in range(3):",
    "while cond:",
    "with ctx():",
    "with torch_xla.step():",
    "try:",
]
GAPS = ["", "\n", "# note\n", "\n# note\n", "    # deeper note\n", "# xm note\n"]


@st.composite
def _block(draw, depth: int, counter: list[int], simple: list[str] = SIMPLE) -> list[str]:
    lines: list[str] = []
    for _ in range(draw(st.integers(1, 4))):
        gap = draw(st.sampled_from(GAPS))
        lines.extend(gap.splitlines())
        if depth < 2 and draw(st.booleans()):
            counter[0] += 1
            header = draw(st.sampled_from(HEADERS)).format(n=counter[0])
            lines.extend(header.splitlines())
            body = draw(_block(depth + 1, counter, simple))
            lines.extend("    " + line if line.strip() else line for line in body)
            if header == "try:":
                lines.append("except ImportError:")
                lines.append("    pass")
            elif header in ("if flag:", "for i in range(3):") and draw(st.booleans()):
                lines.append("else:")
                lines.extend("    " + line for line in draw(_block(depth + 1, counter, simple)))
        else:
            lines.extend(draw(st.sampled_from(simple)).split("\n"))
    return lines


@st.composite
def _programs(draw, simple: list[str] = SIMPLE) -> str:
    body = draw(_block(0, [0], simple))
    return HEADER + "\n" + "\n".join(body) + draw(st.sampled_from(["\n", "", "\n\n# end\n"]))


# Statements with parts on lines of their own, sites or not, for the trimmed layouts.
TRIMMABLE = [
    *SIMPLE,
    "rows = [\n    (1,\n     2),\n    xm.xla_device(),\n    {'k': [3,\n           4]},\n]",
    "cfg = dict(\n    a=[1,\n       2],\n    dev=xm.xla_device(),\n    s='''x\n  y''',\n)",
    "return [\n    1,\n    2]",
    "z = f(a,\n      b,  # c\n      device='xla')",
    "w = g(\n    *args,\n    k=xm.xla_device(),\n    **{'a':\n       1})",
]


def _valid(text: str) -> bool:
    try:
        ast.parse(text)
    except SyntaxError:
        return False
    return True


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_programs().filter(_valid))
def test_random_layouts_rewrite_as_the_whole_tree_does(program: str) -> None:
    _assert_same(program)
    outlined = _outlined(program)
    for module in (cst.parse_module(program), *([outlined] if outlined is not None else [])):
        _assert_prints_as_libcst(module, program)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_programs(TRIMMABLE).filter(_valid))
def test_random_trimmed_layouts_rewrite_as_the_whole_tree_does(program: str) -> None:
    with _trimming_every_statement():
        _assert_same(program)
        outlined = _outlined(program)
    if outlined is not None:
        assert printed(outlined).code == program


def test_crlf_file_is_outlined() -> None:
    """The outline reads "\n" lines: a "\r\n" file is rewritten as its "\n" twin, not parsed
    whole by libcst (0.85 KB a character)."""
    source = _table(400).replace("\n", "\r\n")
    seen: list[str] = []
    original = engine.parse_printed

    def spy(text: str, *args: object):
        seen.append(text)
        return original(text, *args)  # type: ignore[arg-type]

    with mock.patch.object(engine, "parse_printed", spy):
        new = rewrite_source(source).new
    assert seen and "\r" not in seen[0]
    assert new == rewrite_source(_table(400)).new.replace("\n", "\r\n")
