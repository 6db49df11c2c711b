"""Hits meet rules: which rule each hit falls under, and what its finding says."""

from collections.abc import Iterable
from typing import NamedTuple

from neuron_migrate.project_files.hits import SUPPORTED_PYTHONS, Hit
from neuron_migrate.project_files.readers import PartlyUnreadable, read_hits
from neuron_migrate.project_files.rules import file_rules
from neuron_migrate.ruleset.model import Rule


class Target(NamedTuple):
    """The native pair a project moves to: from the compatibility matrix of the scan's target.

    `natives` are every native (torch-neuronx, torch) pair a requirement may name and stay
    valid (empty: the bundled matrices' versions, with this pair)."""

    torch_neuronx: str  # e.g. 2.14.3.1
    torch: str  # e.g. 2.14.0
    natives: tuple[tuple[str, str], ...] = ()

    def family(self) -> str:
        """What the release notes say to pin: the family matching torch (2.14.3.1 -> 2.14)."""
        return ".".join(self.torch_neuronx.split(".")[:2])

    def pair(self) -> str:
        pythons = f"{SUPPORTED_PYTHONS[0]}-{SUPPORTED_PYTHONS[-1]}"
        return (
            f"TorchNeuron {self.torch_neuronx} needs torch-neuronx=={self.family()}.* "
            f"with torch=={self.torch} on Python {pythons}"
        )

    def versions(self) -> dict[str, str]:
        return {"torch-neuronx": self.torch_neuronx, "torch": self.torch}

    def pins(self) -> dict[str, str]:
        """The versions a fix writes: the torch-neuronx family (pip picks its newest build, so a
        fix never moves a project off the current release) and the torch it pairs with."""
        return {"torch-neuronx": f"{self.family()}.*", "torch": self.torch}

    def native_pairs(self) -> tuple["Target", ...]:
        """Every native pair, oldest first."""
        if self.natives:
            pairs = set(self.natives)
        else:
            from neuron_migrate.matrix.versions import available_versions, paired_torch

            pairs = {(v, paired_torch(v)) for v in available_versions() if paired_torch(v)}
        pairs.add((self.torch_neuronx, self.torch))
        return tuple(Target(n, t) for n, t in sorted(pairs, key=_version_key))


class Resolved(NamedTuple):
    hit: Hit
    rule: Rule
    api: str
    message: str  # the finding's
    marker: str  # the TODO comment's text
    pair: Target | None = None  # for a pin: the native pair the file should pin
    fix: str = ""  # the fix this use takes: the rule's, or its value case's (`values:`)


_API_PREFIX = {"env-var": "xla-env-var"}  # the Python analyzer's name for the same idiom


def resolve(text: str, kind: str, rules: tuple[Rule, ...], target: Target) -> list[Resolved]:
    """Every hit of the file that a rule reports or fixes; raises `UnreadableFile`, or
    `PartlyUnreadable` with what the statements that parse resolve to (`resolved`)."""
    try:
        return _resolved(read_hits(text, kind), kind, rules, target)
    except PartlyUnreadable as exc:
        exc.resolved = _resolved(exc.hits, kind, rules, target)
        raise


def _resolved(
    hits: list[Hit], kind: str, rules: tuple[Rule, ...], target: Target
) -> list[Resolved]:
    index = file_rules(rules)
    resolved = []
    chosen = chosen_pair([h for h in hits if _is_pin(h, target)], target)
    for hit in hits:
        idiom = hit.idiom
        if _is_pin(hit, target) and not _admits(hit, chosen):
            idiom = "package-pin"
        rule = index.lookup(idiom, hit.detail, kind)
        if rule is None or rule.files is None or rule.files.fix == "keep":
            continue
        api = f"{_API_PREFIX.get(idiom, idiom)}:{hit.detail}"
        message = marker = rule.file_message()
        fix = rule.files.fix
        case = rule.value_case(hit.value, hit.unset) if idiom == "env-var" else None
        if case is not None:  # `XLA_USE_BF16=0`: nothing to replace; a URL: no directory
            message = marker = case.message
            fix = case.fix
        pair = chosen if idiom == "package-pin" else target
        if idiom in ("package", "package-pin"):
            marker += f"; {pair.pair()}"
        if hit.note:
            message += f" ({hit.note})"
        if idiom in ("package", "package-pin"):
            message += f"; {pair.pair()}"
        resolved.append(Resolved(hit._replace(idiom=idiom), rule, api, message, marker, pair, fix))
    return resolved


def chosen_pair(pins: Iterable[Hit], target: Target) -> Target:
    """The native pair a file's torch / torch-neuronx pins should name: the target's where they
    admit it, else the newest pair they all admit (a valid 2.13 pair stays 2.13), else the
    target's. A package whose pins admit no native pair at all (an XLA build) is to be fixed,
    so it does not constrain the choice."""
    natives = target.native_pairs()
    allowed = set(natives)
    for package in ("torch-neuronx", "torch"):
        mine = [h for h in pins if h.detail == package]
        admitted = {p for p in natives if all(_admits(h, p) for h in mine)}
        if admitted:
            allowed &= admitted
    if not allowed or (target.torch_neuronx, target.torch) in {tuple(p[:2]) for p in allowed}:
        return target
    return max(allowed, key=lambda p: _version_key((p.torch_neuronx, p.torch)))


def _is_pin(hit: Hit, target: Target) -> bool:
    return hit.idiom == "package" and hit.detail in target.versions() and bool(hit.note)


def _admits(hit: Hit, pair: Target) -> bool:
    """Whether the hit's version specifier admits its package's version in `pair`; a
    specifier that does not parse admits everything (it is not ours to judge)."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    try:
        spec = SpecifierSet(hit.note)
    except InvalidSpecifier:
        return True
    return spec.contains(pair.versions()[hit.detail], prereleases=True)


def _version_key(pair: tuple[str, str]) -> tuple[int, ...]:
    return tuple(int(p) for p in pair[0].split(".") if p.isdigit())
