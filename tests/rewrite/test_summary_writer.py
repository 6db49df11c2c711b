"""torch_xla.test.test_utils' summary-writer functions become helpers added to the file, with
torch_xla's behaviour: no writer without a log directory (and tensorboard not imported then),
a start timestamp written first, scalars at a step, flush before close."""

from __future__ import annotations

import sys
import types

from neuron_migrate.rewrite.codemod.engine import rewrite_source
from neuron_migrate.ruleset import load_ruleset

SCRIPT = """\
import torch_xla.test.test_utils as test_utils


def train(logdir, losses):
    writer = test_utils.get_summary_writer(logdir)
    for step, loss in enumerate(losses):
        test_utils.write_to_summary(writer, step, dict_to_write={"loss": loss})
    test_utils.write_to_summary(writer, dict_to_write={"done": 1.0})
    test_utils.close_summary_writer(writer)
    return writer
"""


class _Writer:
    def __init__(self, log_dir=None):
        self.log_dir = log_dir
        self.events: list[tuple] = []

    def add_scalar(self, tag, value, global_step=None):
        self.events.append(("scalar", tag, global_step))

    def flush(self):
        self.events.append(("flush",))

    def close(self):
        self.events.append(("close",))


def _run(new: str, logdir, monkeypatch, tensorboard: bool):
    package = types.ModuleType("torch.utils.tensorboard")
    package.SummaryWriter = _Writer  # type: ignore[attr-defined]
    # Without a log directory, importing tensorboard would fail the run: torch_xla never does.
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", package if tensorboard else None)
    namespace: dict = {}
    exec(compile(new, "<migrated>", "exec"), namespace)
    return namespace["train"](logdir, [0.5, 0.25])


def test_summary_writer_functions_become_helpers_with_torch_xlas_semantics(monkeypatch):
    new = rewrite_source(SCRIPT).new
    assert "torch_xla" not in new
    assert "TODO(neuron-migrate" not in new
    writer = _run(new, "runs/a", monkeypatch, tensorboard=True)
    assert writer.log_dir == "runs/a"
    assert writer.events[0] == ("scalar", "TensorboardStartTimestamp", 0)
    assert writer.events[1:] == [
        ("scalar", "loss", 0),
        ("scalar", "loss", 1),
        ("scalar", "done", None),
        ("flush",),
        ("close",),
    ]


def test_no_log_directory_means_no_writer_and_no_tensorboard_import(monkeypatch):
    new = rewrite_source(SCRIPT).new
    assert _run(new, None, monkeypatch, tensorboard=False) is None
    assert _run(new, "", monkeypatch, tensorboard=False) is None


def test_summary_helpers_are_added_once_on_a_second_run():
    first = rewrite_source(SCRIPT).new
    assert rewrite_source(first).new == first


def test_xla_metrics_asked_for_by_a_variable_are_left_for_a_person():
    call = "test_utils.write_to_summary(w, 1, {}, flag)"
    source = f"import torch_xla.test.test_utils as test_utils\n\n\ndef f(w, flag):\n    {call}\n"
    result = rewrite_source(source)
    rule = load_ruleset().get("NM521")
    assert rule.marker() in result.new
    assert call in result.new
    assert {o.status for o in result.outcomes if o.code == "NM521"} == {"marked"}


def test_xla_metrics_asked_for_write_the_scalars_and_no_metrics(monkeypatch):
    """`write_xla_metrics=True` (pytorch/xla's MNIST and ImageNet scripts) wrote torch_xla's
    own compile and transfer metrics, which the device does not have: the scalars are written,
    and the script no longer needs torch_xla."""
    source = (
        "import torch_xla.test.test_utils as test_utils\n\n\n"
        "def train(logdir, losses):\n"
        "    writer = test_utils.get_summary_writer(logdir)\n"
        "    test_utils.write_to_summary(\n"
        "        writer, 3, dict_to_write={'Accuracy/test': 0.5}, write_xla_metrics=True)\n"
        "    return writer\n"
    )
    result = rewrite_source(source)
    assert "torch_xla" not in result.new and "TODO(neuron-migrate" not in result.new
    assert {o.status for o in result.outcomes if o.code == "NM521"} == {"rewritten"}
    writer = _run(result.new, "runs/a", monkeypatch, tensorboard=True)
    assert writer.events[1:] == [("scalar", "Accuracy/test", 3)]
    assert rewrite_source(result.new).new == result.new


def test_xla_metrics_turned_off_in_so_many_words_is_dropped():
    source = (
        "import torch_xla.test.test_utils as test_utils\n\n\n"
        "def f(w):\n    test_utils.write_to_summary(w, 1, {'a': 1.0}, write_xla_metrics=False)\n"
    )
    new = rewrite_source(source).new
    assert "    neuron_write_to_summary(w, 1, {'a': 1.0})\n" in new
