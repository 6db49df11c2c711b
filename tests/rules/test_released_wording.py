"""No rule tells a person, as a fact, what the released TorchNeuron docs (Neuron 2.33) contradict
or leave open: each claim below was true of a pre-release build, or never stated, and a rule may
name it only as such (the wording that says so does not match the pattern)."""

from __future__ import annotations

import re

import pytest

from neuron_migrate.ruleset import load_ruleset

# (pattern, what the released docs say instead): a pattern matches only the unqualified claim.
CLAIMS = [
    (
        r"NEURON_CC_FLAGS (still )?(reaches|is handed to|goes to)|still hands NEURON_CC_FLAGS",
        "NEURON_CC_FLAGS is not named in the released docs; compiler_args.txt shows the options",
    ),
    (
        r"rejects dynamic shapes",
        "dynamic=True is rejected; shapes that change still run, each one compiling again",
    ),
    (
        r"(default|defaults) (there|for (that|the neuron) device) is float16",
        "the default autocast dtype of the neuron device is not stated in released text",
    ),
    (
        r"get_fallback_ops\(\) is the native list",
        "get_fallback_ops is a beta-build API the released pages read do not name",
    ),
    (
        r"Neuron process group restricts",
        "pipeline parallelism is listed as supported; no released text restricts send/recv",
    ),
    (
        r"(use|logs with|with) TORCH_NEURONX_LOG_LEVEL\b(?! is a)",
        "TORCH_NEURONX_LOG_LEVEL is a pre-release name; the released logging rows are unread",
    ),
    (
        r"collectives read COLLECTIVE_BUCKETSIZE_IN_MB|or set COLLECTIVE_BUCKETSIZE_IN_MB|"
        r"/ COLLECTIVE_BUCKETSIZE_IN_MB",
        "COLLECTIVE_BUCKETSIZE_IN_MB is a pre-release name; the released rows are unread",
    ),
    (
        r"name no NEURON_RT_\* variable|do not name this Neuron Runtime variable",
        "the Neuron Runtime's released environment-variable reference documents NEURON_RT_*",
    ),
]


def _texts() -> list[tuple[str, str, str]]:
    out = []
    for rule in load_ruleset().rules:
        fields = {
            "summary": rule.summary,
            "why": rule.why,
            "manual": rule.manual or "",
            "safety_note": rule.safety_note,
            "replacement": rule.replacement or "",
            "files.message": (rule.files.message if rule.files else None) or "",
        }
        out.extend((rule.code, name, " ".join(text.split())) for name, text in fields.items())
    return out


@pytest.mark.parametrize(("pattern", "instead"), CLAIMS, ids=[c[0][:30] for c in CLAIMS])
def test_no_rule_states_a_claim_the_release_contradicts(pattern: str, instead: str) -> None:
    found = [
        f"{code} {name}" for code, name, text in _texts() if re.search(pattern, text, re.IGNORECASE)
    ]
    assert not found, f"{found}: {instead}"


def test_the_patterns_match_the_claims_they_name() -> None:
    """Each pattern matches the wording it guards against (so a passing test means something)."""
    samples = [
        "The native backend still hands NEURON_CC_FLAGS to neuronx-cc",
        "the neuron backend rejects dynamic shapes",
        "its default there is float16",
        "torch_neuronx.get_fallback_ops() is the native list.",
        "the Neuron process group restricts some of them",
        "for debugging use TORCH_NEURONX_LOG_LEVEL",
        "the Neuron collectives read COLLECTIVE_BUCKETSIZE_IN_MB",
        "The released TorchNeuron docs name no NEURON_RT_* variable",
    ]
    for (pattern, _), sample in zip(CLAIMS, samples, strict=True):
        assert re.search(pattern, sample, re.IGNORECASE), pattern


# (rule, what its advice must say): facts the released docs add that the advice depends on.
REQUIRED = [
    # The allocator is asynchronous: a memory counter read before a sync misses queued work.
    ("NM116", "manual", "torch.neuron.synchronize()"),
    # Changing shapes are not refused: each one compiles again.
    ("NM940", "why", "compiling again"),
]


@pytest.mark.parametrize(("code", "field", "needle"), REQUIRED)
def test_advice_carries_what_the_release_adds(code: str, field: str, needle: str) -> None:
    rule = load_ruleset().get(code)
    text = {"why": rule.why, "manual": rule.manual or ""}[field]
    assert needle in " ".join(text.split())


def test_neuron_cc_flags_is_advice_not_an_xla_use(tmp_path) -> None:
    """NEURON_CC_FLAGS is the Neuron compiler's, not torch_xla's: a `--fail-on xla` gate does not
    fail on it, in Python or in a launch script, and the marker still says what to check."""
    import json

    from tests.cli import invoke

    (tmp_path / "train.py").write_text('import os\nos.environ["NEURON_CC_FLAGS"] = "-O1"\n')
    (tmp_path / "run.sh").write_text("export NEURON_CC_FLAGS=-O1\npython train.py\n")
    result = invoke(["scan", str(tmp_path), "--no-cache", "--no-config", "-f", "json"])
    found = [(f["path"], f["status"]) for f in json.loads(result.stdout)["findings"]]
    assert sorted(found) == [("run.sh", "advice"), ("train.py", "advice")]
    gate = invoke(["scan", str(tmp_path), "--no-cache", "--no-config", "--fail-on", "xla"])
    assert gate.exit_code == 0


def test_fsdp1_gets_a_finding_that_says_only_fsdp2_is_documented(tmp_path) -> None:
    """The released docs document FSDP2 (fully_shard) only: FSDP1's wrapper is reported as
    advice (its status is unknown, not refused), and nothing is rewritten."""
    import json

    from tests.cli import invoke

    (tmp_path / "train.py").write_text(
        "import torch\nfrom torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
        "model = FSDP(torch.nn.Linear(8, 8))\n"
    )
    result = invoke(["scan", str(tmp_path), "--no-cache", "--no-config", "-f", "json"])
    [fsdp] = [f for f in json.loads(result.stdout)["findings"] if f["code"] == "NM604"]
    assert (fsdp["status"], fsdp["line"]) == ("advice", 3)
    assert "FSDP2" in fsdp["message"] and "not stated" in fsdp["message"]
