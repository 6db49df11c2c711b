"""Compiled regions across files: a function or model defined in one module and compiled in
another is judged as compiled code in the module that defines it, and a change in the
compiling file is seen by a cached re-scan of the defining file."""

from __future__ import annotations

import textwrap
from pathlib import Path

from neuron_migrate import api

MODEL = textwrap.dedent(
    """\
    import torch
    import torch.nn as nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            return torch.quantize_per_tensor(self.fc(x), 0.1, 0, torch.quint8)


    def squash(x):
        return torch.quantize_per_tensor(x, 0.1, 0, torch.quint8)


    def helper(x):
        return torch.quantize_per_tensor(x, 0.1, 0, torch.quint8)


    def unused(x):
        return torch.quantize_per_tensor(x, 0.1, 0, torch.quint8)
    """
)
TRAIN = textwrap.dedent(
    """\
    import torch
    from pkg.model import Net
    import pkg.model as m
    from .model import helper


    model = torch.compile(Net().to("neuron"), backend="neuron", dynamic=False)
    fast = torch.compile(m.squash, dynamic=False)


    @torch.compile(backend="neuron", dynamic=False)
    def step(x):
        return helper(x) + 1
    """
)


def _tree(root: Path, train: str = TRAIN) -> Path:
    (root / "pkg").mkdir(parents=True, exist_ok=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "model.py").write_text(MODEL)
    (root / "pkg" / "train.py").write_text(train)
    return root


def _codes(report: api.ScanReport) -> dict[int, str]:
    return {f.line: f.code for f in report.findings if f.path.endswith("model.py")}


def test_a_model_and_functions_compiled_in_another_file_are_compiled_regions(
    tmp_path: Path,
) -> None:
    report = api.scan(_tree(tmp_path), jobs=1, use_cache=False, fail_on=("none",))
    codes = _codes(report)
    assert codes[11] == "NM943"  # Net.forward: torch.compile(Net().to(...)) in train.py
    assert codes[15] == "NM943"  # squash: torch.compile(m.squash)
    assert codes[19] == "NM943"  # helper: called from the @torch.compile step (one level)
    assert codes[23] != "NM943"  # nothing compiles it: the eager refusal
    message = next(f.message for f in report.findings if f.line == 11 and f.code == "NM943")
    assert "pkg/train.py:7" in message


def test_an_edit_of_the_compiling_file_changes_the_compiled_file_s_findings_in_the_cache(
    tmp_path: Path,
) -> None:
    root = _tree(tmp_path / "tree")
    cache = tmp_path / "cache"
    first = api.scan(root, jobs=1, cache_dir=cache, fail_on=("none",))
    assert _codes(first)[11] == "NM943"
    eager = 'model = torch.compile(Net().to("neuron"), backend="neuron", dynamic=False)'
    assert eager in TRAIN
    (root / "pkg" / "train.py").write_text(TRAIN.replace(eager, 'model = Net().to("neuron")'))
    second = api.scan(root, jobs=1, cache_dir=cache, fail_on=("none",))
    assert _codes(second)[11] != "NM943"  # no longer compiled
    assert _codes(second)[15] == "NM943"
    (root / "pkg" / "train.py").write_text(TRAIN)
    third = api.scan(root, jobs=1, cache_dir=cache, fail_on=("none",))
    assert _codes(third) == _codes(first)
    assert third.files_cached == third.files_analyzed  # each answer was in the cache


def test_a_compile_under_a_condition_leaves_the_code_eager(tmp_path: Path) -> None:
    """`if args.compile: model = torch.compile(model)`: the code runs eagerly unless the flag is
    given, so its ops keep their eager statuses (a run without the flag confirms them)."""
    train = textwrap.dedent(
        """\
        import sys
        import torch
        from pkg.model import Net, squash

        model = Net().to("neuron")
        if "--compile" in sys.argv:
            model = torch.compile(model, backend="neuron", dynamic=False)
        fast = torch.compile(squash, dynamic=False)
        """
    )
    report = api.scan(_tree(tmp_path, train), jobs=1, use_cache=False, fail_on=("none",))
    codes = _codes(report)
    assert codes[11] != "NM943"  # Net.forward: compiled only with --compile
    assert codes[15] == "NM943"  # squash: always compiled
