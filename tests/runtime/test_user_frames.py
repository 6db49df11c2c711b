"""The user frames behind what the device records, on both engines: an op's innermost user
line (`locations`) and the user lines that called into it (`callers`), and a graph the compiler
refuses, recorded op by op with its user frames and the kind of refusal (not only as a message).
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = [pytest.mark.torch, pytest.mark.usefixtures("each_engine")]
pytest.importorskip("torch")


STEPS = """\
import torch.nn.functional as F


def loss_of(model, batch, target):
    return F.mse_loss(model(batch), target)


def train_step(model, batch, target):
    loss = loss_of(model, batch, target)
    loss.backward()
    return loss
"""

TRAIN = """\
import torch
import steps

model = torch.nn.Linear(4, 1).to("neuron")
batch = torch.ones(8, 4, device="neuron")
target = torch.zeros(8, 1, device="neuron")
for _ in range(3):
    steps.train_step(model, batch, target)
print("TRAINED")
"""


def test_an_op_records_the_user_lines_that_called_into_its_line(sim_run, tmp_path: Path) -> None:
    (tmp_path / "steps.py").write_text(STEPS)
    run = sim_run(TRAIN)
    run.assert_finished("TRAINED")
    mse = run.op("aten::mse_loss")
    assert mse["locations"] == {"steps.py:5": 3}
    # every user frame outside the innermost, each call counted once
    assert mse["callers"] == {"steps.py:9": 3, "script.py:8": 3}
    backward = run.op("aten::mse_loss_backward")
    assert backward["locations"] == {"steps.py:10": 3}
    assert backward["callers"] == {"script.py:8": 3}


SCORES = """\
import torch


@torch.compile(backend="neuron", dynamic=False)
def scores(q, k):
    return torch.mm(q, k.t(), out_dtype=torch.float32)
"""

CALLS_SCORES = """\
import torch
import scores

q = torch.randn(4, 8, device="neuron").to(torch.bfloat16)
try:
    scores.scores(q, q)
except Exception as error:
    print("REFUSED", type(error).__name__)
try:
    torch.compile(lambda t: t * 2, backend="neuron", dynamic=True)(q)
except Exception as error:
    print("DYNAMIC", type(error).__name__)
"""


def test_a_refused_graph_records_each_op_its_frames_and_why(sim_run, tmp_path: Path) -> None:
    (tmp_path / "scores.py").write_text(SCORES)
    run = sim_run(CALLS_SCORES)
    run.assert_finished("DYNAMIC")
    graph, dynamic = run.trace["compile"]["graphs"]
    assert not graph["ok"] and "aten::mm.dtype" in graph["error"]  # the message stays
    assert graph["refused"] == [
        {
            "op": "aten::mm.dtype",
            "status": "unsupported",
            "kind": "no_lowering",
            "graph": "forward",
            "location": "scores.py:6",
            # the compiled code's user frames, then those that called it, innermost first
            "frames": ["scores.py:6", "script.py:6"],
        }
    ]
    # a setting the backend refuses has no op; its frames are those that called the code
    assert dynamic["refused"] == [
        {
            "op": None,
            "status": "unsupported",
            "kind": "dynamic_shapes",
            "graph": None,
            "location": "script.py:10",
            "frames": ["script.py:10"],
        }
    ]
