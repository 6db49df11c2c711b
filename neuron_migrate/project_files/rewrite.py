"""The migration of one project file: safe edits where the meaning is certain (drop or rename a
variable), a `# TODO(neuron-migrate NMxxx)` comment line elsewhere, nothing in JSON (which has
no comments). The output is read again before it is returned; a second run changes nothing."""

from __future__ import annotations

from typing import NamedTuple

from neuron_migrate.project_files.hits import Edit, line_start
from neuron_migrate.project_files.readers import UnreadableFile, read_hits
from neuron_migrate.project_files.resolve import Resolved, Target, resolve
from neuron_migrate.ruleset.model import Rule


class FileRewrite(NamedTuple):
    text: str  # the new text (the old one when nothing changed)
    fixed: tuple[str, ...]  # codes of the uses rewritten, one per use
    marked: tuple[str, ...]  # codes of the uses left with a marker (or reported only)


def rewrite_project_text(
    text: str, kind: str, rules: tuple[Rule, ...], target: Target, *, unsafe: bool = False
) -> FileRewrite:
    """Raises `UnreadableFile` when the input (or, never expected, the output) does not parse."""
    resolved = _whole_statements(resolve(text, kind, rules, target), unsafe, target)
    edits: list[Edit] = []
    fixed: list[str] = []
    marked: list[str] = []
    markers: dict[int, list[str]] = {}
    for item in resolved:
        edit = _fix(item, unsafe, target)
        if edit is not None:
            edits.append(edit)
            fixed.append(item.rule.code)
            continue
        marked.append(item.rule.code)
        hit = item.hit
        assert item.rule.files is not None
        if item.rule.files.fix == "report" or hit.marker_at is None or kind == "json":
            continue
        line = f"{hit.indent}# TODO(neuron-migrate {item.rule.code}): {item.marker}\n"
        if line not in markers.setdefault(hit.marker_at, []) and not _marked(
            text, hit.marker_at, line
        ):
            markers[hit.marker_at].append(line)
    for at, lines in markers.items():
        edits.append(Edit(at, at, "".join(lines)))
    new = _apply(text, edits)
    if new != text:
        try:
            read_hits(new, kind)
        except UnreadableFile as exc:
            raise UnreadableFile(f"the rewritten file does not parse: {exc}") from exc
    return FileRewrite(new, tuple(fixed), tuple(marked))


def _fix(item: Resolved, unsafe: bool, target: Target) -> Edit | None:
    rule, hit = item.rule, item.hit
    files = rule.files
    assert files is not None
    if rule.safety == "unsafe" and not unsafe:
        return None
    if files.fix == "drop" and hit.drop is not None:
        return Edit(hit.drop[0], hit.drop[1], "")
    if files.fix == "rename" and hit.name is not None and files.rename_to:
        return Edit(hit.name[0], hit.name[1], files.rename_to)
    if files.fix == "pin" and hit.name is not None and hit.detail in target.versions():
        version = target.versions()[hit.detail]
        return Edit(hit.name[0], hit.name[1], f"=={version}.*" if hit.detail != "torch" else f"=={version}")
    return None


def _whole_statements(resolved: list[Resolved], unsafe: bool, target: Target) -> list[Resolved]:
    """Where every use of one statement would be dropped (`export A=1 B=2` with both A and B
    dropped), drop the statement's lines instead -- or, if it shares its lines, none of them."""
    drops: dict[int, list[int]] = {}
    for i, item in enumerate(resolved):
        files = item.rule.files
        assert files is not None
        if item.hit.group_size > 1 and files.fix == "drop" and _fix(item, unsafe, target) is not None:
            drops.setdefault(item.hit.group_key, []).append(i)
    out = list(resolved)
    for members in drops.values():
        first = resolved[members[0]].hit
        if len(members) < first.group_size:
            continue
        for n, i in enumerate(members):
            hit = out[i].hit
            whole = hit.group if n == 0 else None
            out[i] = out[i]._replace(hit=hit._replace(drop=whole))
        if first.group is not None:  # the rest are inside the first's drop: count them fixed
            for i in members[1:]:
                out[i] = out[i]._replace(hit=out[i].hit._replace(drop=(first.group[0],) * 2))
    return out


def _marked(text: str, at: int, line: str) -> bool:
    """The same marker already sits in the comment lines just above `at` (a second run)."""
    end = at
    while end > 0:
        start = line_start(text, end - 1)
        above = text[start:end]
        if not above.strip().startswith("#"):
            return False
        if above.strip() == line.strip():
            return True
        end = start
    return False


def _apply(text: str, edits: list[Edit]) -> str:
    """Edits applied back to front; one that overlaps an earlier-starting edit is left out.
    An insertion and a removal at one offset: the insertion goes first."""
    ordered = sorted(edits, key=lambda e: (e.start, e.end != e.start, e.end))
    kept: list[Edit] = []
    reach = -1
    for edit in ordered:
        if edit.start < reach:
            continue
        kept.append(edit)
        reach = max(reach, edit.end)
    out = text
    for edit in reversed(kept):
        out = out[: edit.start] + edit.text + out[edit.end :]
    return out
