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
        if finding.status == "xla" and finding.path.endswith(".py"):
            found[finding.path.split("/")[0]].add(finding.api)
    assert dict(found) == EXPECTED_XLA


# What each sample's launch script and requirements hold (written for these projects: see the
# files themselves).
EXPECTED_PROJECT_FILES = {
    "ddp_spawn/requirements.txt": {"NM810 package:torch-xla", "NM811 package-pin:torch-neuronx"},
    "ddp_spawn/run.sh": {
        "NM420 command:neuron_parallel_compile",
        "NM701 xla-env-var:PJRT_DEVICE",
        "NM709 xla-env-var:ALLREDUCE_GRADIENTS_BUCKET_SIZE_MB",
        "NM813 instance-type:trn1.32xlarge",
        "NM815 venv:aws_neuronx_venv_pytorch_2_1",
    },
    "mixed_status/requirements.txt": {
        "NM810 package:torch-xla",
        "NM811 package-pin:torch",
        "NM811 package-pin:torch-neuronx",
    },
    "mixed_status/run.sh": {
        "NM701 xla-env-var:PJRT_DEVICE",
        "NM703 xla-env-var:XLA_HLO_DEBUG",
        "NM703 xla-env-var:XLA_IR_DEBUG",
        "NM799 xla-env-var:NEURON_FUSE_SOFTMAX",
    },
    "mlp_single/requirements.txt": {
        "NM810 package:torch-xla",
        "NM811 package-pin:torch",
        "NM811 package-pin:torch-neuronx",
    },
    "mlp_single/run.sh": {
        "NM701 xla-env-var:PJRT_DEVICE",
        "NM710 xla-env-var:NEURON_CC_FLAGS",
        "NM711 xla-env-var:NEURON_RT_VISIBLE_CORES",
    },
    "transformer_modern/requirements.txt": {
        "NM810 package:libneuronxla",
        "NM810 package:torch-xla",
        "NM811 package-pin:torch",
        "NM811 package-pin:torch-neuronx",
    },
    "transformer_modern/run.sh": {
        "NM420 command:neuron_parallel_compile",
        "NM701 xla-env-var:PJRT_DEVICE",
        "NM702 xla-env-var:XLA_USE_BF16",
        "NM706 xla-env-var:NEURON_COMPILE_CACHE_URL",
        "NM710 xla-env-var:NEURON_CC_FLAGS",
    },
}


def test_every_launch_script_and_requirements_finding() -> None:
    report = api.scan(PROJECTS, use_cache=False, fail_on=("none",))
    found: dict[str, set[str]] = defaultdict(set)
    for finding in report.findings:
        if not finding.path.endswith(".py"):
            found[finding.path].add(f"{finding.code} {finding.api}")
    assert dict(found) == EXPECTED_PROJECT_FILES


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
