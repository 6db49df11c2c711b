"""`# neuron-migrate: ignore[NMxxx]` / `fixme[...]` directives in files whose comments start with
`#` (shell, Dockerfile, YAML, TOML, setup.cfg, requirements). JSON has no comments, so no
directives. As in Python, a comment alone on its line covers the next line of code, one after
code covers its own line."""

import re

from neuron_migrate.scan.suppressions import Suppression, directive

# A `#` that starts a comment: at the line's start or after a blank (not `a#b`, `${#x}`).
_COMMENT = re.compile(r"(?:^|(?<=[ \t]))#")


def hash_comment_suppressions(text: str, path: str) -> list[Suppression]:
    lines = text.splitlines()
    code_lines = {
        n for n, line in enumerate(lines, 1) if line.strip() and not line.lstrip().startswith("#")
    }
    last = max(code_lines, default=0)
    found = []
    for number, line in enumerate(lines, 1):
        if "neuron-migrate:" not in line:
            continue
        hash_at = next(
            (m.start() for m in _COMMENT.finditer(line) if "neuron-migrate:" in line[m.start() :]),
            None,
        )
        if hash_at is None:
            continue
        target = number
        if not line[:hash_at].strip():
            target = number + 1
            while target <= last and target not in code_lines:
                target += 1
        suppression = directive(line[hash_at:], number, target, path)
        if suppression is not None:
            found.append(suppression)
    return found
