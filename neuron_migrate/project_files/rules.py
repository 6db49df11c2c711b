"""The rules that apply to project files, looked up by idiom and detail for one file kind."""

from fnmatch import fnmatchcase

from neuron_migrate.ruleset.model import Rule


class FileRules:
    def __init__(self, rules: tuple[Rule, ...]) -> None:
        self.by_idiom: dict[str, list[Rule]] = {}
        self.known: dict[tuple[str, str, str], Rule | None] = {}
        for rule in rules:
            if rule.files is not None:
                self.by_idiom.setdefault(rule.files.idiom, []).append(rule)

    def lookup(self, idiom: str, detail: str, kind: str) -> Rule | None:
        """The rule for a hit: an exact detail beats a pattern, a longer pattern a shorter.
        Answers are kept: a tree names the same few commands and variables again and again."""
        key = (idiom, detail, kind)
        try:
            return self.known[key]
        except KeyError:
            pass
        rule = self.known[key] = self._lookup(idiom, detail, kind)
        return rule

    def _lookup(self, idiom: str, detail: str, kind: str) -> Rule | None:
        best: tuple[int, int, Rule] | None = None
        for rule in self.by_idiom.get(idiom, ()):
            files = rule.files
            assert files is not None
            if kind not in files.kinds:
                continue
            if not files.details:
                score = (0, 0)
            else:
                matched = [p for p in files.details if fnmatchcase(detail, p)]
                if not matched:
                    continue
                exact = any(not any(c in p for c in "*?[") for p in matched)
                score = (2 if exact else 1, max(len(p) for p in matched))
            if best is None or score > best[:2]:
                best = (*score, rule)
        return best[2] if best is not None else None


_built: dict[int, tuple[tuple[Rule, ...], FileRules]] = {}


def file_rules(rules: tuple[Rule, ...]) -> FileRules:
    """The index of a loaded rule tuple, built once per tuple (keyed by identity: hashing the
    rules would cost more than a file's scan)."""
    entry = _built.get(id(rules))
    if entry is None or entry[0] is not rules:
        entry = (rules, FileRules(rules))
        if len(_built) >= 4:
            _built.clear()
        _built[id(rules)] = entry
    return entry[1]
