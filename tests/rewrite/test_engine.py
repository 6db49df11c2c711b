"""The per-file engine: failures are contained, output always parses, encodings survive."""

from __future__ import annotations

import ast

import libcst as cst
import pytest

from neuron_migrate.rewrite.codemod import targets
from neuron_migrate.rewrite.codemod.engine import RewriteFailed, rewrite_source
from neuron_migrate.rewrite.codemod.results import Outcome
from neuron_migrate.rewrite.rewriter import rewrite_file, write_atomically
from neuron_migrate.ruleset import load_ruleset


def test_file_without_sites_is_returned_as_is():
    source = "import torch\nx = torch.ones(2)  # 'xla' in a comment\n"
    result = rewrite_source(source)
    assert result.new == source
    assert not result.outcomes


def test_syntax_error_propagates_as_syntax_error():
    with pytest.raises(SyntaxError):
        rewrite_source("import torch_xla\nprint 'x'\n")


def test_output_that_does_not_parse_is_refused(monkeypatch):
    broken = [cst.Expr(cst.Name("def"))]  # a keyword where a name should be
    monkeypatch.setitem(targets.STATEMENT, "step-marker", lambda target: broken)
    source = "import torch_xla.core.xla_model as xm\n\n\ndef f():\n    xm.mark_step()\n"
    result = rewrite_source(source)
    assert "def\n" not in result.new and "    xm.mark_step()\n" in result.new
    assert [o.code for o in result.refused] == ["NM104"]


FORCED = (
    "import torch_xla.core.xla_model as xm\n\n\n"
    "def train(steps):\n"
    "    device = xm.xla_device()\n"
    "    for step in range(steps):\n"
    "        xm.mark_step()\n"
    "        xm.master_print(f'step {step}')\n"
    "    return device\n"
)


def _force_a_broken_print(monkeypatch):
    """master_print's transform, made to write a keyword where a statement goes."""
    monkeypatch.setitem(
        targets.STATEMENT, "master-print", lambda target: [cst.Expr(cst.Name("def"))]
    )


def test_a_site_whose_rewrite_does_not_parse_is_left_as_it_was_and_named(monkeypatch):
    _force_a_broken_print(monkeypatch)
    result = rewrite_source(FORCED)
    assert result.refused == (
        Outcome("NM209", 8, "torch_xla.core.xla_model.master_print", "marked"),
    )
    ast.parse(result.new)
    assert [o for o in result.outcomes if o.code == "NM209"] == list(result.refused)  # once
    lines = result.new.splitlines()
    at = lines.index("        xm.master_print(f'step {step}')")  # as it was, marked
    assert lines[at - 1].startswith("        # TODO(neuron-migrate NM209): ")
    assert "        xm.mark_step()" not in lines  # the other sites are rewritten
    assert '    device = torch.device("neuron")' in lines


def test_a_forced_broken_transform_writes_the_file_with_the_site_marked_and_exits_2(
    tmp_path, monkeypatch
):
    from tests.cli import invoke

    _force_a_broken_print(monkeypatch)
    path = tmp_path / "train.py"
    path.write_text(FORCED)
    done = invoke(["rewrite", "--apply", "--no-cache", "--jobs", "1", str(tmp_path)])
    assert done.exit_code == 2
    assert "train.py:8: NM209 torch_xla.core.xla_model.master_print" in done.stderr
    assert "does not parse" in done.stderr
    written = path.read_text()
    ast.parse(written)
    assert "xm.master_print(f'step {step}')" in written and "TODO(neuron-migrate NM209)" in written


def test_an_output_no_site_left_alone_repairs_is_refused_whole(monkeypatch):
    """The failure is no site's (the guard pass, say): nothing is shown or written."""
    from neuron_migrate.rewrite.codemod import engine

    monkeypatch.setattr(engine, "_check_parses", _always_fails)
    with pytest.raises(RewriteFailed):
        rewrite_source(FORCED)


def _always_fails(new: str) -> None:
    raise RewriteFailed("rewritten code does not parse: forced")


def test_every_line_of_the_output_is_parsed_an_unchanged_statement_s_too(monkeypatch):
    """A statement without a site is printed as its source; moved to another indentation
    (an availability guard's branch lifted, here without its re-indentation) its lines
    after the first would not follow. The whole output is parsed, so that is refused too."""
    from neuron_migrate.rewrite.codemod import guards

    monkeypatch.setattr(guards, "_lifted", lambda stmt: [stmt])
    source = (
        "try:\n    import torch_xla.core.xla_model as xm\n    HAS_XLA = True\n"
        "except ImportError:\n    HAS_XLA = False\n\n\n"
        "def step(args):\n    if HAS_XLA:\n        xm.mark_step()\n"
        "        if args.log:\n            print('logged')\n        print('done')\n"
    )
    result = rewrite_source(source)
    ast.parse(result.new)
    assert [(o.code, o.line) for o in result.refused] == [("NM104", 10)]


def test_a_crash_inside_a_transform_becomes_a_file_error(tmp_path, monkeypatch):
    path = tmp_path / "a.py"
    path.write_text("import torch_xla.core.xla_model as xm\nxm.mark_step()\n")

    def boom(*args, **kwargs):
        raise RuntimeError("transform bug")

    monkeypatch.setattr("neuron_migrate.rewrite.rewriter.rewrite_source", boom)
    result = rewrite_file(str(path), "a.py", load_ruleset(), unsafe=False)
    assert result.error is not None and result.error.kind == "internal"
    assert "transform bug" in result.error.reason
    assert not result.changed


def test_crlf_line_endings_survive(tmp_path):
    path = tmp_path / "w.py"
    path.write_bytes(b"import torch_xla.core.xla_model as xm\r\n\r\nxm.mark_step()\r\nprint(1)\r\n")
    result = rewrite_file(str(path), "w.py", load_ruleset(), unsafe=False)
    assert result.encoded() == b"print(1)\r\n"


def test_atomic_write_keeps_the_file_mode(tmp_path):
    path = tmp_path / "s.py"
    path.write_text("old\n")
    path.chmod(0o750)
    write_atomically(str(path), b"new\n")
    assert path.read_text() == "new\n"
    assert path.stat().st_mode & 0o777 == 0o750
    assert [p.name for p in tmp_path.iterdir()] == ["s.py"]


def test_user_alias_for_torch_distributed_is_used():
    source = (
        "import torch.distributed as tdist\nimport torch_xla.runtime as xr\n\nn = xr.world_size()\n"
    )
    new = rewrite_source(source).new
    assert new.endswith(
        "n = tdist.get_world_size() if tdist.is_initialized()"
        ' else int(os.environ.get("WORLD_SIZE", 1))\n'
    )
    assert "torch_xla" not in new and "import torch.distributed as dist" not in new


def test_function_local_import_is_removed_when_unused():
    source = (
        "def step(opt):\n"
        "    import torch_xla.core.xla_model as xm\n"
        "\n"
        "    opt.step()\n"
        "    xm.mark_step()\n"
    )
    assert rewrite_source(source).new == "def step(opt):\n    opt.step()\n"


def test_f_string_gets_the_other_quote():
    source = 'import torch_xla.runtime as xr\n\nprint(f"local {xr.local_ordinal()}")\n'
    new = rewrite_source(source).new
    compile(new, "f.py", "exec")
    assert "int(os.environ.get('LOCAL_RANK', 0))" in new


def test_semicolon_line_keeps_its_other_statement():
    source = "import torch_xla.core.xla_model as xm\n\nx = 1; xm.mark_step()\n"
    assert rewrite_source(source).new == "x = 1\n"


def test_marker_goes_above_the_new_statement_that_holds_its_site():
    """`value` stands for `xm.xla_device` (a function object: marked); the mesh_reduce call it is
    passed to becomes several statements, and `value` lands in the first."""
    source = (
        "import torch_xla.core.xla_model as xm\n\n"
        "value = xm.xla_device\n"
        "mean = xm.mesh_reduce('loss', value, np_mean)\n"
    )
    first = rewrite_source(source).new
    lines = first.splitlines()
    at = lines.index("_gathered = [value]")
    assert lines[at - 1].startswith("# TODO(neuron-migrate NM101)")
    assert rewrite_source(first).new == first


def test_rewriting_makes_no_reference_cycles_but_literal_evals():
    """Rewrite workers collect garbage rarely (`gc_tuning.FEW_CYCLES`): that is only free while
    a rewrite leaves (next to) no cyclic garbage. The one kind it leaves: the closures of
    `ast.literal_eval`, which libcst calls for a literal's value, a few objects a call."""
    import gc
    import types
    from pathlib import Path

    fixtures = Path(__file__).parents[2] / "fixtures"
    sources = [
        p.read_text() for p in sorted(fixtures.rglob("*.py")) if "torch_xla" in p.read_text()
    ]
    ruleset = load_ruleset()
    assert len(sources) > 20
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        for source in sources:
            try:
                rewrite_source(source, ruleset)
            except SyntaxError:
                continue
        gc.collect()
        garbage = list(gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    functions = {o.__qualname__ for o in garbage if isinstance(o, types.FunctionType)}
    assert all(name.startswith("literal_eval.<locals>.") for name in functions)
    assert {type(o) for o in garbage} <= {types.FunctionType, types.CellType, tuple}


def test_a_node_libcst_refuses_is_refused_at_its_site_not_the_files_syntax(tmp_path, monkeypatch):
    """libcst's CSTValidationError is a SyntaxError: a transform that builds a node libcst refuses
    (`return(a if b else c)` once did) skipped the whole file as a syntax error, exit 0. It is a
    transform's bug like an output that does not parse: that site is left, marked and named,
    and the file's other sites are rewritten."""
    path = tmp_path / "a.py"
    path.write_text(
        "import torch_xla.core.xla_model as xm\n\n\ndef f():\n    xm.mark_step()\n"
        "    return xm.xla_device()\n"
    )

    def refused(target):
        raise cst.CSTValidationError("Must have at least one space after 'return'.")

    monkeypatch.setitem(targets.STATEMENT, "step-marker", refused)
    result = rewrite_file(str(path), "a.py", load_ruleset(), unsafe=False)
    assert result.error is None
    assert [o.code for o in result.refused] == ["NM104"]
    assert "    xm.mark_step()\n" in result.new
    assert 'return torch.device("neuron")' in result.new
