"""The bundled sample projects: the scan names every torch_xla use they hold, and
mixed_status reaches all four op statuses."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from neuron_migrate import api

PROJECTS = Path(__file__).parents[2] / "fixtures" / "projects"

EXPECTED_XLA = {
    "mlp_single": {
        "torch_xla.core.xla_model.xla_device",
        "torch_xla.core.xla_model.mark_step",
        "torch_xla.core.xla_model.master_print",
        "torch_xla.core.xla_model.save",
        "xla-device-string:xla",
    },
    "ddp_spawn": {
        "torch_xla.distributed.xla_multiprocessing.spawn",
        "torch_xla.distributed.xla_backend",
        "torch_xla.distributed.parallel_loader.MpDeviceLoader",
        "torch_xla.core.xla_model.optimizer_step",
        "torch_xla.core.xla_model.rendezvous",
        "torch_xla.core.xla_model.master_print",
        "torch_xla.core.xla_model.xla_device",
        "torch_xla.core.xla_model.get_ordinal",
        "torch_xla.core.xla_model.xrt_world_size",
        "torch_xla.runtime.world_size",
        "xla-process-group:xla",
        "xla-init-method:xla://",
    },
    "transformer_modern": {
        "torch_xla.device",
        "torch_xla.sync",
        "torch_xla.launch",
        "torch_xla.runtime.world_size",
        "torch_xla.runtime.global_ordinal",
        "torch_xla.amp.autocast",
        "torch_xla.core.xla_model.optimizer_step",
        "openxla-compile-backend:openxla",
        "xla-device-string:xla",
    },
    "mixed_status": {
        "torch_xla.core.xla_model.xla_device",
        "torch_xla.core.xla_model.mark_step",
        "openxla-compile-backend:openxla",
    },
}


def test_every_torch_xla_use_by_qualified_name() -> None:
    report = api.scan(PROJECTS, use_cache=False, fail_on=("none",))
    assert report.errors == []
    found: dict[str, set[str]] = defaultdict(set)
    for finding in report.findings:
        if finding.status == "xla":
            found[finding.path.split("/")[0]].add(finding.api)
    assert dict(found) == EXPECTED_XLA


def test_mixed_status_reaches_every_status() -> None:
    report = api.scan(PROJECTS / "mixed_status", use_cache=False, fail_on=("none",))
    by_status = {f.status for f in report.findings if f.category != "torch_xla"}
    assert {"native", "cpu_fallback", "unsupported", "float64"} <= by_status
    assert report.passed  # --fail-on none


def test_default_gate_fails_on_the_unsupported_namespace() -> None:
    report = api.scan(PROJECTS / "mixed_status", use_cache=False)
    assert not report.passed
    assert [(f.path, f.api) for f in report.gate_failures] == [
        ("losses.py", "torch.distributions.Normal")
    ]
