"""A replacement that is a conditional expression keeps the meaning of the code around it."""

from __future__ import annotations

import ast

import pytest

from neuron_migrate.rewrite.codemod.engine import rewrite_source

XR = "import torch_xla.runtime as xr\n\n"
RANK = 'dist.get_rank() if dist.is_initialized() else int(os.environ.get("RANK", 0))'


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        # as the body of another conditional: unparenthesized, it would swallow that one's else
        ("r = xr.global_ordinal() if ok else -1", f"r = ({RANK}) if ok else -1"),
        # as the test of another conditional, or a comprehension's `if`: a syntax error bare
        ("r = a if xr.global_ordinal() else b", f"r = a if ({RANK}) else b"),
        ("r = [d for d in ds if xr.global_ordinal()]", f"r = [d for d in ds if ({RANK})]"),
        # the else branch needs nothing
        ("r = -1 if ok else xr.global_ordinal()", f"r = -1 if ok else {RANK}"),
    ],
)
def test_conditional_replacement_inside_a_conditional(line, expected):
    new = rewrite_source(XR + line + "\n").new
    assert new.splitlines()[-1] == expected
    ast.parse(new)


def test_parenthesized_body_evaluates_as_the_original():
    new = rewrite_source(XR + "def f(ok):\n    return xr.global_ordinal() if ok else -1\n").new
    scope: dict[str, object] = {}

    class _Dist:  # an initialized group of rank 3
        @staticmethod
        def is_initialized():
            return True

        @staticmethod
        def get_rank():
            return 3

    exec(new.replace("import torch.distributed as dist", ""), {"dist": _Dist}, scope)
    f = scope["f"]
    assert callable(f)
    assert (f(True), f(False)) == (3, -1)
