"""The migration of one project file: safe edits where the meaning is certain (drop or rename a
variable), a `# TODO(neuron-migrate NMxxx)` comment line elsewhere, nothing in JSON (which has
no comments). The output is read again before it is returned; a second run changes nothing."""

from typing import NamedTuple

from neuron_migrate.project_files.hits import Edit, Positions, line_start
from neuron_migrate.project_files.readers import PartlyUnreadable, UnreadableFile, read_hits
from neuron_migrate.project_files.resolve import Resolved, Target, resolve
from neuron_migrate.ruleset.model import Rule


class Use(NamedTuple):
    """What became of one use: the rewriter's `Outcome` fields."""

    code: str
    line: int  # in the old text
    api: str
    status: str  # rewritten | marked


class FileRewrite(NamedTuple):
    text: str  # the new text (the old one when nothing changed)
    uses: tuple[Use, ...]
    # Why some statements were left as they are: they do not parse (a shell script's).
    unread: str | None = None


def rewrite_project_text(
    text: str, kind: str, rules: tuple[Rule, ...], target: Target, *, unsafe: bool = False
) -> FileRewrite:
    """Raises `UnreadableFile` when the input (or, never expected, the output) does not parse.
    Statements that do not parse (a shell script's) are left as they are, and the others
    migrated: `unread` says which."""
    unread: PartlyUnreadable | None = None
    try:
        found = resolve(text, kind, rules, target)
    except PartlyUnreadable as exc:
        found, unread = exc.resolved, exc
    resolved = _whole_statements(found, unsafe, target)
    edits: list[Edit] = []
    uses: list[Use] = []
    markers: dict[int, list[str]] = {}
    positions = Positions(text)
    directed = _directed_lines(text, kind)
    for item in resolved:
        line = positions.of(item.hit.start)[0]
        assert item.rule.files is not None
        if (item.rule.code, line) in directed or item.rule.files.fix == "report":
            # A use under an `ignore`/`fixme` directive, or one that is only reported, stays.
            uses.append(Use(item.rule.code, line, item.api, "kept"))
            continue
        edit = _fix(item, unsafe, target)
        uses.append(Use(item.rule.code, line, item.api, "marked" if edit is None else "rewritten"))
        if edit is not None:
            edits.append(edit)
            continue
        hit = item.hit
        if hit.marker_at is None or kind == "json":
            continue
        comment = f"{hit.indent}# TODO(neuron-migrate {item.rule.code}): {item.marker}\n"
        if comment not in markers.setdefault(hit.marker_at, []) and not _marked(
            text, hit.marker_at, comment
        ):
            markers[hit.marker_at].append(comment)
    for at, lines in markers.items():
        edits.append(Edit(at, at, "".join(lines)))
    new = _apply(text, edits)
    if new != text:
        try:
            read_hits(new, kind)
        except PartlyUnreadable as exc:  # what did not parse, and nothing more, as it was
            if unread is None or exc.unread != unread.unread:
                raise UnreadableFile(f"the rewritten file does not parse: {exc}") from exc
        except UnreadableFile as exc:
            raise UnreadableFile(f"the rewritten file does not parse: {exc}") from exc
    return FileRewrite(new, tuple(uses), None if unread is None else str(unread))


def _fix(item: Resolved, unsafe: bool, target: Target) -> Edit | None:
    rule, hit = item.rule, item.hit
    files = rule.files
    assert files is not None
    if rule.safety == "unsafe" and not unsafe:
        return None
    fix = item.fix or files.fix
    if fix == "drop" and hit.drop is not None:
        return Edit(hit.drop[0], hit.drop[1], "")
    if fix == "rename" and hit.name is not None and files.rename_to:
        return Edit(hit.name[0], hit.name[1], files.rename_to)
    if fix == "pin" and hit.name is not None and hit.detail in target.versions():
        pin = (item.pair or target).pins()[hit.detail]
        return Edit(hit.name[0], hit.name[1], pin if hit.bare_pin else f"=={pin}")
    return None


def _directed_lines(text: str, kind: str) -> set[tuple[str, int]]:
    """(code, line) pairs an `ignore[...]` / `fixme[...]` comment covers."""
    if kind == "json" or "neuron-migrate:" not in text:
        return set()
    from neuron_migrate.project_files.comments import hash_comment_suppressions

    return {(code, s.target_line) for s in hash_comment_suppressions(text, "") for code in s.codes}


def _whole_statements(resolved: list[Resolved], unsafe: bool, target: Target) -> list[Resolved]:
    """Where every use of one statement would be dropped (`export A=1 B=2` with both A and B
    dropped), drop the statement's lines instead -- or, if it shares its lines, none of them."""
    drops: dict[int, list[int]] = {}
    for i, item in enumerate(resolved):
        files = item.rule.files
        assert files is not None
        if (
            item.hit.group_size > 1
            and (item.fix or files.fix) == "drop"
            and _fix(item, unsafe, target) is not None
        ):
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


def target_pair(version: str | None = None) -> Target:
    """The pair of the matrix `version` (default: the newest): what `rewrite --target` pins."""
    from neuron_migrate.matrix import load_matrix

    matrix = load_matrix(version)
    return Target(matrix.version, matrix.torch_version)
