"""The name model: Python's scoping rules, aliases and guards."""

from __future__ import annotations

import ast
import textwrap

import pytest

from neuron_migrate.scan.analyzer.scopes import NameModel
from neuron_migrate.scan.analyzer.sites import find_sites


def _calls(source: str) -> dict[int, str]:
    """Line -> qualified name of each resolved call."""
    sites = find_sites(textwrap.dedent(source))
    return {s.line: s.qualname for s in sites if s.kind == "call" and s.qualname}


def test_import_forms() -> None:
    calls = _calls(
        """
        import torch_xla.core.xla_model
        import torch_xla.core.xla_model as xm
        from torch_xla.core import xla_model
        from torch_xla.core.xla_model import mark_step as ms
        torch_xla.core.xla_model.mark_step()
        xm.mark_step()
        xla_model.mark_step()
        ms()
        """
    )
    assert set(calls.values()) == {"torch_xla.core.xla_model.mark_step"}
    assert sorted(calls) == [6, 7, 8, 9]


def test_parameter_shadows_module_import() -> None:
    calls = _calls(
        """
        import torch_xla.core.xla_model as xm
        def f(xm):
            xm.mark_step()
        def g():
            xm.mark_step()
        """
    )
    assert calls == {6: "torch_xla.core.xla_model.mark_step"}


def test_class_scope_is_invisible_to_methods() -> None:
    calls = _calls(
        """
        import torch_xla.core.xla_model as xm
        class Trainer:
            xm = None
            def step(self):
                xm.mark_step()
        """
    )
    assert calls == {6: "torch_xla.core.xla_model.mark_step"}


def test_global_import_inside_function() -> None:
    calls = _calls(
        """
        def setup():
            global xm
            import torch_xla.core.xla_model as xm
        def step():
            xm.mark_step()
        """
    )
    assert calls == {6: "torch_xla.core.xla_model.mark_step"}


def test_alias_assignment_and_comprehension() -> None:
    calls = _calls(
        """
        import torch_xla.core.xla_model as xm
        sync = xm.mark_step
        sync()
        devices = [xm.xla_device(i) for i in range(2)]
        """
    )
    assert calls == {
        4: "torch_xla.core.xla_model.mark_step",
        5: "torch_xla.core.xla_model.xla_device",
    }


def test_placeholder_none_does_not_make_a_name_ambiguous() -> None:
    sites = find_sites(
        textwrap.dedent(
            """
            try:
                import torch_xla.core.xla_model as xm
            except ImportError:
                xm = None
            xm.mark_step()
            """
        )
    )
    call = next(s for s in sites if s.kind == "call")
    assert call.ambiguous == () and call.qualname == "torch_xla.core.xla_model.mark_step"
    assert call.guarded is False
    imported = next(s for s in sites if s.kind == "import")
    assert imported.guarded is True


def test_two_meanings_are_ambiguous() -> None:
    sites = find_sites(
        textwrap.dedent(
            """
            if USE_XLA:
                from torch_xla.core.xla_model import xla_device as get_device
            else:
                from my_project.devices import get_device
            get_device()
            """
        )
    )
    call = next(s for s in sites if s.kind == "call")
    assert set(call.ambiguous) == {
        "torch_xla.core.xla_model.xla_device",
        "my_project.devices.get_device",
    }


def test_unused_import_is_marked() -> None:
    source = (
        "import torch_xla.distributed.xla_backend\n"
        "import torch_xla.core.xla_model as xm\n"
        "xm.mark_step()\n"
    )
    used = {s.qualname: s.used for s in find_sites(source) if s.kind == "import"}
    assert used == {"torch_xla.distributed.xla_backend": False, "torch_xla.core.xla_model": True}


def test_model_records_every_import() -> None:
    model = NameModel(ast.parse("import a.b.c\nfrom d import e as f\nfrom . import g\n"))
    assert [r.module for r in model.imports] == ["a.b.c", "d.e", None]


def test_character_columns_with_non_ascii_source() -> None:
    source = 'name = "é"; import torch_xla.core.xla_model as xm; xm.mark_step()\n'
    call = next(s for s in find_sites(source) if s.kind == "call")
    assert source[call.col : call.end_col] == "xm.mark_step"


@pytest.mark.parametrize(
    ("test", "guarded"),
    [
        ("is_torch_xla_available()", True),
        ("XLA_AVAILABLE", True),
        ("flags.useTPU", True),
        ("isNeuronxAvailable()", True),
        ("args.output_dir", False),  # "output" holds the letters of "tpu", not the word
        ("config.num_neurons > 0", False),
    ],
)
def test_an_availability_test_is_told_by_whole_words(test: str, guarded: bool) -> None:
    sites = find_sites(f"if {test}:\n    import torch_xla.core.xla_model as xm\n")
    imported = next(s for s in sites if s.kind == "import")
    assert imported.guarded is guarded
