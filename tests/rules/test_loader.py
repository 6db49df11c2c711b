"""Rule files: errors name the file and the field; lookups follow the documented order."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from neuron_migrate.errors import DataFileError
from neuron_migrate.resources import rules_dir
from neuron_migrate.rewrite.codemod import transforms  # noqa: F401  (registers the transforms)
from neuron_migrate.rewrite.codemod.targets import known_transforms
from neuron_migrate.ruleset import RuleSet, load_rules, load_ruleset

GOOD = """\
code: NM104
name: xla-mark-step
summary: s
why: w
match:
  qualnames: [torch_xla.core.xla_model.mark_step]
rewrite:
  transform: step-marker
safety: safe
manual: m
"""


def write_rule(root: Path, family: str, filename: str, text: str) -> Path:
    (root / family).mkdir(parents=True, exist_ok=True)
    path = root / family / filename
    path.write_text(text)
    return path


def test_bundled_rules_load_and_pickle():
    rules = load_ruleset().rules
    assert len(rules) >= 80
    assert pickle.loads(pickle.dumps(rules)) == rules


def test_every_named_transform_exists():
    names = {r.rewrite.transform for r in load_ruleset().rules if r.rewrite and r.rewrite.transform}
    assert names <= known_transforms()


def test_every_family_has_rules():
    families = {r.family for r in load_ruleset().rules}
    assert families == {
        "device",
        "ranks",
        "collectives",
        "launch",
        "utils",
        "sharding",
        "env",
        "legacy",
        "torch-ops",
    }


@pytest.mark.parametrize(
    ("text", "field"),
    [
        (GOOD.replace("code: NM104", "code: X104"), "code"),
        (GOOD.replace("safety: safe", "safety: maybe"), "safety"),
        (GOOD.replace("summary: s\n", ""), "summary"),
        (
            GOOD.replace(
                "  qualnames: [torch_xla.core.xla_model.mark_step]\n", "  qualnames: [bad name]\n"
            ),
            "match.qualnames[0]",
        ),
        (GOOD + "colour: red\n", "colour"),
        (
            GOOD.replace(
                "rewrite:\n  transform: step-marker\n", "rewrite:\n  template: x\n  transform: y\n"
            ),
            "rewrite.template",
        ),
        (
            GOOD.replace("manual: m\n", "").replace("rewrite:\n  transform: step-marker\n", ""),
            "manual",
        ),
    ],
)
def test_bad_rule_is_one_line_naming_file_and_field(tmp_path, text, field):
    write_rule(tmp_path, "device", "NM104-xla-mark-step.yaml", text)
    with pytest.raises(DataFileError) as info:
        load_rules(tmp_path)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{tmp_path.name}/device/NM104-xla-mark-step.yaml: {field}:")


def test_invalid_yaml_is_reported(tmp_path):
    write_rule(tmp_path, "device", "NM104-xla-mark-step.yaml", "code: [unclosed\n")
    with pytest.raises(DataFileError, match="invalid YAML"):
        load_rules(tmp_path)


def test_file_name_and_family_must_match(tmp_path):
    write_rule(tmp_path, "ranks", "NM104-xla-mark-step.yaml", GOOD)
    with pytest.raises(DataFileError, match="belongs in rules/device"):
        load_rules(tmp_path)


def test_duplicate_codes_are_rejected(tmp_path):
    write_rule(tmp_path, "device", "NM104-xla-mark-step.yaml", GOOD)
    write_rule(
        tmp_path,
        "device",
        "NM104-other-name.yaml",
        GOOD.replace("name: xla-mark-step", "name: other-name").replace("mark_step]", "sync]"),
    )
    with pytest.raises(DataFileError, match="NM104 is also used"):
        load_rules(tmp_path)


def test_lookup_by_qualname():
    rs = load_ruleset()
    assert rs.for_qualname("torch_xla.core.xla_model.mark_step").code == "NM104"
    assert rs.for_qualname("torch_xla.sync").code == "NM104"
    assert (
        rs.for_qualname("torch_xla.distributed.fsdp.wrap.size_based_auto_wrap_policy").code
        == "NM601"
    )
    assert rs.for_qualname("torch_xla.some.future.api").code == "NM199"
    assert rs.for_qualname("torch.sort") is None


def test_lookup_by_idiom_prefers_a_matching_detail():
    rs = load_ruleset()
    assert rs.for_idiom("xla-env-var", "PJRT_DEVICE").code == "NM701"
    assert rs.for_idiom("xla-env-var", "NEURON_PJRT_WORLD_SIZE").code == "NM708"
    assert rs.for_idiom("xla-env-var", "XLA_SOMETHING_NEW").code == "NM799"
    assert rs.for_idiom("xla-device-string", "xla:1").code == "NM102"
    assert rs.for_idiom("no-such-idiom", None) is None


def test_lookup_by_analyzer_and_code():
    rs = load_ruleset()
    assert rs.for_analyzer("op-cpu-fallback").code == "NM902"
    assert rs.get("nm104").name == "xla-mark-step"
    with pytest.raises(KeyError):
        rs.for_analyzer("nope")


def test_imports_have_their_rule():
    rs = load_ruleset()
    assert rs.for_import("torch_xla.distributed.xla_backend").code == "NM404"
    assert rs.for_import("torch_xla.core.xla_model").code == "NM100"
    assert rs.for_import("numpy") is None


def test_duplicate_qualname_across_rules_is_rejected(tmp_path):
    rules = load_rules(rules_dir())
    clash = rules[1]._replace(code="NM197", match=rules[0].match)
    with pytest.raises(DataFileError, match="also matched"):
        RuleSet((*rules, clash))
