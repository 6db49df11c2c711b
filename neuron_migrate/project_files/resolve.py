"""Hits meet rules: which rule each hit falls under, and what its finding says."""

from typing import NamedTuple

from neuron_migrate.project_files.hits import SUPPORTED_PYTHONS, Hit
from neuron_migrate.project_files.readers import read_hits
from neuron_migrate.project_files.rules import file_rules
from neuron_migrate.ruleset.model import Rule


class Target(NamedTuple):
    """The native pair a project moves to: from the compatibility matrix of the scan's target."""

    torch_neuronx: str  # e.g. 2.14.3.0
    torch: str  # e.g. 2.14.0

    def pair(self) -> str:
        pythons = f"{SUPPORTED_PYTHONS[0]}-{SUPPORTED_PYTHONS[-1]}"
        return (
            f"TorchNeuron {self.torch_neuronx} needs torch-neuronx=={self.torch_neuronx}.* "
            f"with torch=={self.torch} on Python {pythons}"
        )

    def versions(self) -> dict[str, str]:
        return {"torch-neuronx": self.torch_neuronx, "torch": self.torch}


class Resolved(NamedTuple):
    hit: Hit
    rule: Rule
    api: str
    message: str  # the finding's
    marker: str  # the TODO comment's text


_API_PREFIX = {"env-var": "xla-env-var"}  # the Python analyzer's name for the same idiom


def resolve(text: str, kind: str, rules: tuple[Rule, ...], target: Target) -> list[Resolved]:
    """Every hit of the file that a rule reports or fixes; raises `UnreadableFile`."""
    index = file_rules(rules)
    resolved = []
    for hit in read_hits(text, kind):
        idiom = hit.idiom
        if idiom == "package" and hit.detail in target.versions() and _excludes(hit, target):
            idiom = "package-pin"
        rule = index.lookup(idiom, hit.detail, kind)
        if rule is None or rule.files is None or rule.files.fix == "keep":
            continue
        api = f"{_API_PREFIX.get(idiom, idiom)}:{hit.detail}"
        message = marker = rule.file_message()
        if idiom in ("package", "package-pin"):
            marker += f"; {target.pair()}"
        if hit.note:
            message += f" ({hit.note})"
        if idiom in ("package", "package-pin"):
            message += f"; {target.pair()}"
        resolved.append(Resolved(hit._replace(idiom=idiom), rule, api, message, marker))
    return resolved


def _excludes(hit: Hit, target: Target) -> bool:
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    try:
        spec = SpecifierSet(hit.note)
    except InvalidSpecifier:
        return False
    return bool(hit.note) and not spec.contains(target.versions()[hit.detail], prereleases=True)
