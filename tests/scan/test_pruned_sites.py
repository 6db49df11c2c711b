"""The scan makes no site of a method call its classification could never report (`x.append()`
is no Tensor method), and finds the rule of a name by its own dotted prefixes: both only make
the scan cheaper, so every fixture's findings must be the same as without them."""

from __future__ import annotations

import ast
from functools import partial
from pathlib import Path

import pytest

from neuron_migrate.matrix.versions import newest_version
from neuron_migrate.ruleset import load_ruleset
from neuron_migrate.scan.analyzer.classify import classify_sites, reported_method
from neuron_migrate.scan.analyzer.sites import _SiteFinder, find_module_sites, find_sites
from neuron_migrate.scan.scan_data import Context, context_for

FIXTURES = Path(__file__).parents[2] / "fixtures"
SOURCES = sorted(FIXTURES.rglob("*.py"))


@pytest.fixture(scope="module")
def context() -> Context:
    return context_for(newest_version())


def _findings(context: Context, path: Path, pruned: bool) -> tuple[object, ...]:
    text = path.read_text(encoding="utf-8", errors="replace")
    tree = ast.parse(text)
    methods = partial(reported_method, context) if pruned else None
    sites, _ = find_module_sites(text, tree, None, methods)
    out = classify_sites(context, path.name, text, sites)
    return (tuple(out.findings), dict(out.unmapped_apis))


def _parses(path: Path) -> bool:
    try:
        ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    except (SyntaxError, ValueError):
        return False
    return True


def test_every_fixture_finds_the_same_with_pruned_sites(context: Context) -> None:
    sources = [p for p in SOURCES if _parses(p)]
    assert len(sources) > 50
    for path in sources:
        assert _findings(context, path, True) == _findings(context, path, False), path


def test_a_method_no_classification_reads_has_no_site(context: Context) -> None:
    source = (
        "import torch\n"
        "names = []\n"
        "x = torch.randn(3)\n"
        "names.append(x)\n"
        "y = x.double()\n"
        "z = x.sort()\n"
    )
    methods = partial(reported_method, context)
    everything = {s.detail for s in find_module_sites(source)[0] if s.kind == "method"}
    pruned = {
        s.detail for s in find_module_sites(source, None, None, methods)[0] if s.kind == "method"
    }
    assert everything == {"append", "double", "sort"}
    assert pruned == {"double", "sort"}
    placed = {
        s.detail: s.placement
        for s in find_module_sites(source, None, None, methods)[0]
        if s.kind == "method"
    }
    assert placed == {"double": "host", "sort": "host"}


def _linear_for_qualname(rules: object, qualname: str) -> object:
    """The rule lookup as a scan of every prefix, longest first (what the index must equal)."""
    exact = rules._exact.get(qualname)  # type: ignore[attr-defined]
    if exact is not None:
        return exact
    for prefix, rule in rules._prefixes:  # type: ignore[attr-defined]
        if qualname == prefix or qualname.startswith(prefix + "."):
            return rule
    return None


def test_the_prefix_index_finds_the_longest_prefix_rule() -> None:
    rules = load_ruleset()
    prefixes = [prefix for prefix, _ in rules._prefixes]
    assert prefixes
    names = {"torch", "torch_xla", "os", "", "torch_xla.", "a.b..c"}
    for prefix in prefixes:
        names |= {prefix, prefix + ".x", prefix + ".x.y", prefix + "x", prefix[:-1]}
    for name in sorted(names):
        assert rules.for_qualname(name) is _linear_for_qualname(rules, name), name


def test_every_fixture_finds_the_same_idioms_without_the_gate(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sources = [p for p in SOURCES if _parses(p)]
    gated = [find_module_sites(p.read_text(encoding="utf-8", errors="replace")) for p in sources]
    monkeypatch.setattr(_SiteFinder, "may_hold_idioms", lambda self: True)
    for path, found in zip(sources, gated, strict=True):
        text = path.read_text(encoding="utf-8", errors="replace")
        assert find_module_sites(text) == found, path


@pytest.mark.parametrize(
    ("source", "idiom"),
    [
        (
            'import torch\ndevice = "\\x78la"\nx = torch.ones(2, device=device)\n',
            "xla-device-string",
        ),
        ('import torch\nx = torch.ones(2, device="x" "la")\n', "xla-device-string"),
        ("import os\nenv = dict(os.environ, XLA_USE_BF16='1')\n", "xla-env-var"),
        ("import os\nos.environ['PJRT_' 'DEVICE'] = 'x'\n", "xla-env-var"),
    ],
    ids=["escaped", "concatenated", "keyword", "concatenated-env"],
)
def test_an_idiom_spelled_unlike_its_value_is_found(source: str, idiom: str) -> None:
    assert idiom in {s.idiom for s in find_sites(source) if s.kind == "idiom"}
