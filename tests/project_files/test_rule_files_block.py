"""The `files:` block of a rule: bad data is one line naming the file and the field."""

from pathlib import Path

import pytest

from neuron_migrate.errors import DataFileError
from neuron_migrate.ruleset.loader import load_rules

RULE = """\
code: NM420
name: neuron-parallel-compile
summary: s
why: w
manual: m
files:
  kinds: [shell]
  idiom: command
  details: [neuron_parallel_compile]
  fix: marker
  examples:
    - kind: shell
      before: |
        neuron_parallel_compile ./run.sh
      after: |
        # TODO(neuron-migrate NM420): m
        neuron_parallel_compile ./run.sh
"""


def _load(tmp_path: Path, text: str):  # type: ignore[no-untyped-def]
    folder = tmp_path / "launch"
    folder.mkdir(exist_ok=True)
    (folder / "NM420-neuron-parallel-compile.yaml").write_text(text)
    return load_rules(tmp_path)


def test_a_rule_for_project_files_only_needs_no_python_match(tmp_path: Path) -> None:
    (rule,) = _load(tmp_path, RULE)
    assert rule.files is not None and rule.files.kinds == ("shell",)
    assert rule.fix_safety == "manual"


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (("kinds: [shell]", "kinds: [bash]"), "files.kinds"),
        (("idiom: command", "idiom: cmd"), "files.idiom"),
        (("fix: marker", "fix: rename"), "files.rename_to"),
        (("kinds: [shell]", "kinds: [shell, yaml]"), "files.examples"),
        (("    - kind: shell\n", "    - kind: yaml\n"), "files.examples[0].kind"),
        (("  fix: marker\n", "  fix: marker\n  colour: red\n"), "files.colour"),
    ],
)
def test_bad_files_block(tmp_path: Path, edit: tuple[str, str], field: str) -> None:
    with pytest.raises(DataFileError) as info:
        _load(tmp_path, RULE.replace(*edit))
    message = str(info.value)
    assert "\n" not in message
    assert f"NM420-neuron-parallel-compile.yaml: {field}:" in message
