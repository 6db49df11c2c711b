"""Lookup over the loaded rules: by qualified name, idiom, analyzer finding kind or code."""

from __future__ import annotations

from fnmatch import fnmatchcase
from functools import lru_cache
from pathlib import Path

from neuron_migrate.errors import DataFileError
from neuron_migrate.resources import rules_dir
from neuron_migrate.ruleset.loader import load_rules
from neuron_migrate.ruleset.model import Rule

# Every torch_xla import that no more specific import rule covers.
IMPORT_RULE_CODE = "NM100"
IMPORT_TRANSFORM = "remove-unused-import"


class RuleSet:
    def __init__(self, rules: tuple[Rule, ...]) -> None:
        self.rules = rules
        self._by_code = {rule.code: rule for rule in rules}
        self._by_name = {rule.name.lower(): rule for rule in rules}
        self._exact: dict[str, Rule] = {}
        self._prefixes: list[tuple[str, Rule]] = []  # "torch_xla.distributed.fsdp" -> rule
        self._analyzer: dict[str, Rule] = {}
        self._idioms: dict[str, list[Rule]] = {}
        for rule in rules:
            self._index(rule)
        # Longest prefix first, so a sub-module rule wins over its parent's.
        self._prefixes.sort(key=lambda item: len(item[0]), reverse=True)
        # By prefix, the first rule of that order: a name looks up its own dotted prefixes.
        self._by_prefix: dict[str, Rule] = {}
        for prefix, rule in self._prefixes:
            self._by_prefix.setdefault(prefix, rule)

    def _index(self, rule: Rule) -> None:
        for name in rule.match.qualnames:
            if name.endswith(".*"):
                self._prefixes.append((name[:-2], rule))
            elif name in self._exact:
                raise DataFileError(
                    rule.path,
                    "match.qualnames",
                    f"{name} is also matched by {self._exact[name].path}",
                )
            else:
                self._exact[name] = rule
        if rule.match.analyzer is not None:
            self._analyzer[rule.match.analyzer] = rule
        if rule.match.idiom is not None:
            self._idioms.setdefault(rule.match.idiom, []).append(rule)

    def get(self, code: str) -> Rule:
        try:
            return self._by_code[code.upper()]
        except KeyError:
            raise KeyError(f"no rule {code}") from None

    def find(self, code_or_name: str) -> Rule:
        """The rule with this code (NM104) or name (xla-mark-step), in any case."""
        rule = self._by_code.get(code_or_name.upper()) or self._by_name.get(code_or_name.lower())
        if rule is None:
            raise KeyError(f"no rule {code_or_name}")
        return rule

    def for_qualname(self, qualname: str) -> Rule | None:
        """Exact name, then the longest module prefix (`mod.*`).

        The catch-all for other torch_xla names is data: a rule matching `torch_xla.*`."""
        rule = self._exact.get(qualname)
        if rule is not None:
            return rule
        by_prefix = self._by_prefix
        name = qualname
        while True:  # `a.b.c`, then `a.b`, then `a`: the longest prefix first
            rule = by_prefix.get(name)
            if rule is not None:
                return rule
            cut = name.rfind(".")
            if cut < 0:
                return None
            name = name[:cut]

    def for_reference(self, qualname: str) -> Rule | None:
        """The rule for a name or call that resolves to `qualname`. A module object used as a
        value (`f(xm)`, `_XM = xm`) is not an import: the catch-all covers it."""
        rule = self.for_qualname(qualname)
        if (
            rule is not None
            and rule.rewrite is not None
            and rule.rewrite.transform == IMPORT_TRANSFORM
        ):
            return self.for_qualname(qualname.partition(".")[0] + "._")
        return rule

    def for_import(self, module: str) -> Rule | None:
        """The rule for an import statement of `module`: the side-effect backend imports have
        their own rule; every other torch_xla import is NM100, and another library's is the
        import rule of its root module (NxD: NM807)."""
        rule = self._exact.get(module)
        if (
            rule is not None
            and rule.rewrite is not None
            and rule.rewrite.transform == IMPORT_TRANSFORM
        ):
            return rule
        if module == "torch_xla" or module.startswith("torch_xla."):
            return self._by_code.get(IMPORT_RULE_CODE)
        # Another library's plain imports: the import rule its root module names.
        root = self._exact.get(module.partition(".")[0])
        if root is not None and root.rewrite and root.rewrite.transform == IMPORT_TRANSFORM:
            return root
        return None

    def for_idiom(self, kind: str, detail: str | None = None) -> Rule | None:
        """A rule listing a detail pattern that matches wins over one that takes every detail."""
        candidates = self._idioms.get(kind, [])
        if detail is not None:
            for rule in candidates:
                if any(fnmatchcase(detail, pattern) for pattern in rule.match.details):
                    return rule
        for rule in candidates:
            if not rule.match.details:
                return rule
        return None

    def for_analyzer(self, name: str) -> Rule:
        try:
            return self._analyzer[name]
        except KeyError:
            raise KeyError(f"no rule for analyzer finding {name!r}") from None


@lru_cache(maxsize=8)
def _load_cached(root: str) -> RuleSet:
    return RuleSet(load_rules(Path(root)))


def load_ruleset(root: Path | None = None) -> RuleSet:
    """The rules under `root` (default: the bundled rules/), loaded once per process."""
    return _load_cached(str(root or rules_dir()))
