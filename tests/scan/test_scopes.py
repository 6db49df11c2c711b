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


def test_each_read_is_in_the_scope_and_under_the_guard_python_gives_it() -> None:
    # Where the walk enters and leaves a scope or a guard: what a definition evaluates outside
    # its body (decorators, defaults, annotations), a lambda's defaults, a comprehension's first
    # iterable, a class body, a guarded `if` and what follows it.
    source = textwrap.dedent(
        """
        import torch
        XLA_AVAILABLE = True

        @torch.no_grad()
        def f(torch=torch.zeros(1), *, n: torch.Tensor = None) -> torch.Tensor:
            return torch
        g = lambda torch=torch.ones(1): torch
        squares = [torch for torch in torch.arange(3)]

        class C:
            torch = 1
            t = torch
            def m(self):
                return torch

        if XLA_AVAILABLE:
            def h(torch=torch.eye(2)):
                return torch
            a = torch
        b = torch
        """
    )
    model = NameModel(ast.parse(source))
    reads = {
        (name.lineno, name.col_offset): (model.resolve_name("torch", scope), guarded)
        for name, (scope, guarded) in model.loads.items()
        if name.id == "torch"
    }
    the_import, local = ("torch",), ()
    expected = {
        (5, 1): (the_import, False),  # the decorator
        (6, 12): (the_import, False),  # a default, beside the parameter it sets
        (6, 34): (the_import, False),  # an annotation
        (6, 58): (the_import, False),  # the return annotation
        (7, 11): (local, False),  # the body: the parameter
        (8, 17): (the_import, False),  # a lambda's default
        (8, 32): (local, False),  # its body
        (9, 11): (local, False),  # a comprehension's element: its variable
        (9, 30): (the_import, False),  # its first iterable, outside it
        (13, 8): (local, False),  # a class body: the class's binding
        (15, 15): (the_import, False),  # a method: the class's scope is invisible
        (18, 16): (the_import, True),  # a guarded default
        (19, 15): (local, True),  # a guarded body
        (20, 8): (the_import, True),  # after the definition, still under the guard
        (21, 4): (the_import, False),  # after the `if`
    }
    assert {at: (r.qualnames if r else None, g) for at, (r, g) in reads.items()} == expected
