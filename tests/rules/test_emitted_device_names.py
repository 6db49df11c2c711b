"""Every `torch_neuronx` / `torch.neuron` name the tool writes into migrated code or tells a
person to use exists on the (simulated) device.

Emitted means: a rule's template (each `{name}` filled as the rule fills it), its replacement
and its marker's advice (`manual`), the Python transforms' sources (what they render) and the
helpers added to files. A rule's `why` and `summary` may name the legacy APIs it matches, so
they are not read. The names are looked up inside a process started by `neuron-migrate run`,
where the simulated `torch_neuronx` and `torch.neuron` are installed as a migrated script sees
them.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from neuron_migrate.rewrite.codemod import helpers, transforms
from neuron_migrate.rewrite.codemod.templates import last_component
from neuron_migrate.ruleset import load_ruleset

NAME = re.compile(r"\b(?:torch_neuronx|torch\.neuron)(?:\.[A-Za-z_]\w*)*")

# Looks up each dotted name by attribute from its module; prints the ones missing.
_LOOKUP = """
import importlib, json, sys
import torch
missing = []
for name in json.loads(sys.argv[1]):
    if name.startswith("torch_neuronx"):
        root, _, rest = name.partition(".")
    else:
        root, rest = "torch", name[len("torch."):]
    obj = importlib.import_module(root)
    for part in rest.split(".") if rest else []:
        if not hasattr(obj, part):
            missing.append(name)
            break
        obj = getattr(obj, part)
print(json.dumps(missing))
"""


def _rule_texts() -> dict[str, list[str]]:
    """What each rule emits, by rule code."""
    out: dict[str, list[str]] = {}
    for rule in load_ruleset().rules:
        texts = [rule.manual or "", rule.replacement or ""]
        rewrite = rule.rewrite
        if rewrite is not None and rewrite.template is not None:
            for qualname in rule.match.qualnames or ("",):
                name = last_component(qualname)
                texts.append(rewrite.template.replace("{name}", rewrite.option(name, name) or name))
        out[rule.code] = texts
    return out


def _code_texts() -> dict[str, list[str]]:
    package = Path(transforms.__file__).parent
    sources = {p.name: [p.read_text()] for p in sorted(package.glob("*.py"))}
    sources["helpers.py"] = [h.source for h in helpers.HELPERS.values()]
    return sources


def emitted_names() -> dict[str, set[str]]:
    """Each emitted name, with where it comes from."""
    found: dict[str, set[str]] = {}
    for where, texts in {**_rule_texts(), **_code_texts()}.items():
        for text in texts:
            for name in NAME.findall(text):
                found.setdefault(name, set()).add(where)
    return found


def test_the_walk_finds_the_names_rules_emit() -> None:
    names = emitted_names()
    assert "NM106" in names["torch.neuron.synchronize"]  # a template
    assert "NM509" in names["torch_neuronx.get_fallback_ops"]  # a template and its advice
    assert "steps.py" in names["torch.neuron.synchronize"]  # a transform's source


@pytest.mark.torch
def test_every_emitted_device_name_exists_on_the_device(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    names = emitted_names()
    script = tmp_path / "lookup.py"
    script.write_text(_LOOKUP)
    command = ["python", str(script), json.dumps(sorted(names))]
    done = subprocess.run(
        [sys.executable, "-m", "neuron_migrate", "run", "--", *command],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    missing = json.loads(done.stdout.strip().splitlines()[-1])
    assert not missing, {name: sorted(names[name]) for name in missing}
