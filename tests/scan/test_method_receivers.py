"""A method called on what a non-torch library or builtin returns is that value's own method,
not a Tensor method the device might not run."""

from __future__ import annotations

import textwrap
from pathlib import Path

from neuron_migrate import api

SOURCE = textwrap.dedent(
    """\
    import os
    import numpy as np
    import pandas as pd
    import torch


    def summary(accs, frame, folder):
        a = np.asarray(accs).median()
        b = pd.Series(accs).median()
        c = np.stack(accs).unique()
        d = sorted(accs).index(0)
        e = os.path.basename(folder).split(".")
        f = torch.tensor(accs, device="neuron").median()
        g = frame["loss"].median()
        return a, b, c, d, e, f, g
    """
)


def test_methods_on_library_results_are_not_tensor_methods(tmp_path: Path) -> None:
    path = tmp_path / "summary.py"
    path.write_text(SOURCE)
    report = api.scan(path, jobs=1, use_cache=False)
    methods = {(f.line, f.api) for f in report.findings if f.api.startswith("Tensor.")}
    # a torch call's result is a tensor (here a device one); an unknown receiver may be one
    assert methods == {(13, "Tensor.median"), (14, "Tensor.median")}
