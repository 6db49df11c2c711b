"""NM811 against Neuron 2.34: a pin that names a native pair is left alone, whichever native
family it picks; a fix pins the family the release notes name (`torch-neuronx==2.14.*` with
torch 2.14), so it never moves a project off the current release."""

from __future__ import annotations

import pytest

from neuron_migrate.project_files.resolve import Target
from neuron_migrate.project_files.rewrite import rewrite_project_text
from neuron_migrate.project_files.scan import scan_project_file
from neuron_migrate.ruleset import load_ruleset

NEWEST = Target("2.14.3.1", "2.14.0")
OLDER = Target("2.14.3.0", "2.14.0")


def codes(text: str, target: Target = NEWEST) -> list[tuple[str, int]]:
    result = scan_project_file(
        text, "requirements.txt", "requirements", load_ruleset().rules, target
    )
    assert result.error is None
    return [(f.code, f.line) for f in result.findings]


def fixed(text: str, target: Target = NEWEST) -> str:
    rules = load_ruleset().rules
    return rewrite_project_text(text, "requirements", rules, target, unsafe=True).text


@pytest.mark.parametrize(
    "pins",
    [
        "torch-neuronx==2.14.3.1\n",  # the current release
        "torch-neuronx==2.14.3.1.*\ntorch==2.14.0\n",
        "torch-neuronx==2.14.*\ntorch==2.14.0\n",  # the family, as the release notes say
        "torch==2.13.0\ntorch-neuronx>=2.13.3,<2.14\n",  # a valid 2.13 native pair
        "torch-neuronx==2.13.*\n",
        "torch-neuronx==2.14.3.0\n",  # an older native release: not ours to move
    ],
)
def test_a_native_pair_is_not_flagged(pins: str) -> None:
    assert codes(pins) == []
    assert fixed(pins) == pins


def test_a_newer_release_than_the_target_is_not_flagged_or_downgraded() -> None:
    pins = "torch-neuronx==2.14.3.1\ntorch==2.14.0\n"
    assert codes(pins, OLDER) == []
    assert fixed(pins, OLDER) == pins


def test_an_xla_build_is_fixed_to_the_targets_family() -> None:
    pins = "torch-neuronx==2.9.0.2.15.32035\ntorch>=2.1,<2.10\n"
    assert codes(pins) == [("NM811", 1), ("NM811", 2)]
    assert fixed(pins) == "torch-neuronx==2.14.*\ntorch==2.14.0\n"
    assert fixed(pins, OLDER) == "torch-neuronx==2.14.*\ntorch==2.14.0\n"


def test_an_xla_build_beside_a_native_torch_takes_that_torchs_family() -> None:
    pins = "torch==2.13.0\ntorch-neuronx==2.9.0.2.15.32035\n"
    assert codes(pins) == [("NM811", 2)]
    assert fixed(pins) == "torch==2.13.0\ntorch-neuronx==2.13.*\n"


def test_a_mismatched_pair_is_flagged_and_fixed_to_one_pair() -> None:
    pins = "torch==2.13.0\ntorch-neuronx==2.14.*\n"
    assert codes(pins) == [("NM811", 1)]
    assert fixed(pins) == "torch==2.14.0\ntorch-neuronx==2.14.*\n"


def test_the_message_names_the_family_to_pin() -> None:
    result = scan_project_file(
        "torch-neuronx==2.9.0.2.15.32035\n",
        "requirements.txt",
        "requirements",
        load_ruleset().rules,
        NEWEST,
    )
    [finding] = result.findings
    assert "TorchNeuron 2.14.3.1 needs torch-neuronx==2.14.* with torch==2.14.0" in finding.message
