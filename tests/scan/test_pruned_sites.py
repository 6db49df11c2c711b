"""The scan makes no site of a method call its classification could never report (`x.append()`
is no Tensor method) nor of a torch reference it could only count or drop (`torch.Tensor` in an
annotation, a call the API map lacks), and finds the rule of a name by its own dotted prefixes:
all only make the scan cheaper, so every fixture's findings must be the same as without them."""

from __future__ import annotations

import ast
from functools import partial
from pathlib import Path

import pytest

from neuron_migrate.matrix.versions import newest_version
from neuron_migrate.ruleset import load_ruleset
from neuron_migrate.scan.analyzer import placement
from neuron_migrate.scan.analyzer import sites as sites_module
from neuron_migrate.scan.analyzer.classify import (
    classify_sites,
    reference_verdict,
    reference_verdicts,
    reported_method,
)
from neuron_migrate.scan.analyzer.sites import (
    REPORTED,
    UNMAPPED,
    UNREPORTED,
    Site,
    _SiteFinder,
    find_module_sites,
    find_sites,
    scan_sites,
    torch_api,
)
from neuron_migrate.scan.scan_data import Context, context_for

FIXTURES = Path(__file__).parents[2] / "fixtures"
SOURCES = sorted(FIXTURES.rglob("*.py"))


@pytest.fixture(scope="module")
def context() -> Context:
    return context_for(newest_version())


def _findings(context: Context, path: Path, pruned: bool) -> tuple[object, ...]:
    text = path.read_text(encoding="utf-8", errors="replace")
    return _classified(context, text, path.name, pruned)


def _classified(context: Context, text: str, name: str, pruned: bool) -> tuple[object, ...]:
    """The findings and the unmapped calls (in their order) as the scan reports them."""
    if not pruned:
        sites, _ = find_module_sites(text)
        out = classify_sites(context, name, text, sites)
        return (tuple(out.findings), list(out.unmapped_apis.items()))
    methods = partial(reported_method, context)
    found = scan_sites(text, None, None, methods, partial(reference_verdict, context))
    torch = found.refers_to_torch or None
    out = classify_sites(context, name, text, found.sites, torch, found.unmapped)
    return (tuple(out.findings), list(out.unmapped_apis.items()))


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


def test_a_torch_reference_classification_drops_has_no_site(context: Context) -> None:
    source = (
        "import torch\n"
        "def f(x: torch.Tensor, n) -> torch.Tensor:\n"  # names: nothing comes of them
        "    torch._check(n > 0)\n"  # a call the API map lacks: counted
        "    y = torch.zeros(n, dtype=torch.float32)\n"  # a dtype object: nothing
        "    torch._check(n < 9)\n"
        "    return y.sort()\n"  # placed on the host all the same: `y` is made there
    )
    found = scan_sites(
        source, None, None, partial(reported_method, context), partial(reference_verdict, context)
    )
    kept = [(s.kind, s.qualname or s.detail, s.placement) for s in found.sites]
    assert kept == [("call", "torch.zeros", "host"), ("method", "sort", "host")]
    assert [api for _, api in found.unmapped] == ["torch._check"] * 2
    assert found.refers_to_torch
    everything = [(s.kind, s.qualname or s.detail) for s in find_module_sites(source)[0]]
    assert ("name", "torch.Tensor") in everything
    assert ("call", "torch._check") in everything
    assert _classified(context, source, "f.py", True) == _classified(context, source, "f.py", False)


def test_a_module_whose_torch_references_all_go_still_reads_as_torch(context: Context) -> None:
    """Its method calls are classified as Tensor methods only in a module that uses torch: the
    one reference that says so has no site of its own."""
    source = "import torch\nT = torch.Tensor\n\ndef f(x):\n    return x.double()\n"
    found = scan_sites(
        source, None, None, partial(reported_method, context), partial(reference_verdict, context)
    )
    assert [s.kind for s in found.sites] == ["method"]
    pruned = _classified(context, source, "f.py", True)
    assert pruned == _classified(context, source, "f.py", False)
    assert pruned[0], "x.double() is reported as a float64 method"


def _classify_one(context: Context, qualname: str, kind: str) -> tuple[object, ...]:
    site = Site(kind, 3, 4, 3, 20, qualname=qualname, placement="device")
    out = classify_sites(context, "f.py", "import torch\n\n    x\n", [site], True)
    return (tuple(out.findings), dict(out.unmapped_apis))


def test_the_reference_verdict_is_what_classification_makes_of_every_api(
    context: Context,
) -> None:
    """Every API the matrix, the API map and the rules name (and names none of them knows):
    a name or call judged UNREPORTED gives nothing, an UNMAPPED one only its count as a call."""
    names = {"torch.no_such_api", "torch", "functorch.vmap", "torch.compile", "torch.fft.fft"}
    names |= set(context.api_map.apis) | set(context.api_map.modules) | set(context.matrix.apis)
    names |= {rule.namespace + ".x" for rule in context.matrix.namespaces}
    names |= {"torch.float32", "torch.long", "torch.float64", "torch.channels_last"}
    verdicts = set()
    for qualname in sorted(n for n in names if n.startswith(("torch", "functorch"))):
        verdict = reference_verdict(context, torch_api(qualname))
        verdicts.add(verdict)
        name, call = (
            _classify_one(context, qualname, "name"),
            _classify_one(context, qualname, "call"),
        )
        if verdict == UNREPORTED:
            assert name == call == ((), {}), qualname
        elif verdict == UNMAPPED:
            assert name == ((), {}), qualname
            assert call == ((), {torch_api(qualname): 1}), qualname
    assert verdicts == {REPORTED, UNREPORTED, UNMAPPED}


# A cycle of assignments whose placements depend on where it is entered first: `y.foo()` (a
# call with no site) enters it at `y` and makes the torch.abs a host op; entered at torch.abs
# itself, the cut makes it unknown.
_CYCLE = (
    "import torch\n"
    "def f():\n"
    "    for _ in range(3):\n"
    "        y.foo()\n"
    "        x = torch.abs(y)\n"
    "        y = x.foo()\n"
    "    return x.sort()\n"
)


def _placements(context: Context, source: str) -> list[tuple[int, str | None, str]]:
    methods = partial(reported_method, context)
    found = scan_sites(source, None, None, methods, reference_verdicts(context))
    return [(s.line, s.qualname or s.detail, s.placement) for s in found.sites]


def test_calls_without_a_site_are_placed_in_turn_where_a_cycle_is_cut(
    context: Context, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sites' calls are placed alone first; where that cut a cycle, every call is placed
    in turn again, so each site gets the placement it gets with every call a site."""
    everything = {(s.line, s.qualname or s.detail): s.placement for s in find_sites(_CYCLE)}
    pruned = _placements(context, _CYCLE)
    assert pruned == [(5, "torch.abs", "host"), (7, "sort", "host")]
    assert all(everything[line, name] == placed for line, name, placed in pruned)
    # ... which the sites' calls alone do not give: the test reaches the second placement
    monkeypatch.setattr(placement.Placer, "order_free", property(lambda self: True))
    assert _placements(context, _CYCLE) == [(5, "torch.abs", "unknown"), (7, "sort", "unknown")]


def test_a_chain_too_deep_to_follow_places_every_call_in_turn(
    context: Context, monkeypatch: pytest.MonkeyPatch
) -> None:
    """How deep a chain can be followed depends on what earlier placements left known: a
    placement that gave up sends the module to the placement of every call in turn."""
    calls: list[bool] = []
    real = sites_module._SiteFinder._placements

    def recorded(self: object, calls_: object, sites_only: bool) -> object:
        calls.append(sites_only)
        return real(self, calls_, sites_only)  # type: ignore[arg-type]

    monkeypatch.setattr(sites_module._SiteFinder, "_placements", recorded)
    links = 3000
    source = "import torch\nx0 = torch.zeros(2)\n"
    source += "".join(f"x{i} = x{i - 1}.foo()\n" for i in range(1, links))
    source += f"x{links - 2}.foo()\ny = x{links - 1}.sort()\n"
    _placements(context, source)
    assert calls == [True, False]


def test_verdicts_are_kept_for_the_few_newest_contexts() -> None:
    # A long-lived process (the language server, a scan server) may load many contexts in
    # turn: the verdicts of each are kept only while it is among the newest few.
    from neuron_migrate.scan.analyzer.classify import _CONTEXTS_KEPT, _per_context

    caches: dict[int, tuple[Context, dict[object, object]]] = {}
    contexts = [object() for _ in range(_CONTEXTS_KEPT + 2)]
    for made in contexts:
        _per_context(caches, made)["verdict"] = made  # type: ignore[arg-type]
    assert len(caches) == _CONTEXTS_KEPT
    assert _per_context(caches, contexts[-1]) == {"verdict": contexts[-1]}  # type: ignore[arg-type]
    assert _per_context(caches, contexts[0]) == {}  # type: ignore[arg-type]  # dropped: afresh
