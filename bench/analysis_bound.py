"""What a cold scan cannot go below, and what skipping code could save, on a real tree.

    python bench/analysis_bound.py                  # the installed torch package, 3 rounds
    python bench/analysis_bound.py ROOT --rounds 5

One process, CPU time, medians over the rounds; the files are those the scan parses (`.py`
files its prefilter lets through). Each line is a cost over `ast.parse` of every `.py` file
of the tree (the hard-cases bench's floor, there in two workers, here in one):

    parse, prefiltered    ast.parse of the files the scan parses, each tree freed
    + bare walk           the same and a walk that visits every node and records its parent:
                          the least any analysis that looks at every node in Python pays
    + name model          the same and the name model's walk (scopes, bindings, loads)
    analysis              the scan's analysis of each file (`analyze_source`), parse included

Then the share of the tree's nodes a lazy analysis could leave unvisited at best: the bodies of
functions, or the simple statements, in which nothing can make a site -- no name an import or
an alias binds, no import, `global` or `nonlocal`, no attribute named like a method the scan
reports, no `:=` -- in modules the scan searches for no XLA idiom. The nodes are
counted from the tree (an oracle: a real screen before the walk sees only text, and finds less).
"""

from __future__ import annotations

import argparse
import ast
import statistics
import sys
import time
import warnings
from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path

from neuron_migrate.gc_tuning import FEW_CYCLES, collect_less
from neuron_migrate.matrix.versions import newest_version
from neuron_migrate.project.discover import may_hold_findings
from neuron_migrate.scan.analysis import analyze_source
from neuron_migrate.scan.analyzer.classify import reported_method
from neuron_migrate.scan.analyzer.scopes import NameModel, child_nodes
from neuron_migrate.scan.analyzer.sites import _SiteFinder
from neuron_migrate.scan.scan_data import Context, context_for

_SIMPLE = (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.Raise, ast.Assert)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _parsed(text: str) -> ast.Module | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        try:
            return ast.parse(text)
        except SyntaxError:
            return None


def bare_walk(tree: ast.AST) -> int:
    """Every node visited once, its parent recorded: the skeleton of the name model's walk."""
    parents: dict[ast.AST, ast.AST] = {}
    stack = [tree]
    while stack:
        node = stack.pop()
        for child in child_nodes(node):
            parents[child] = node
            stack.append(child)
    return len(parents)


def _timed(texts: Iterable[str], work: Callable[[str], object]) -> float:
    start = time.process_time()
    for text in texts:
        work(text)
    return time.process_time() - start


def skippable(texts: list[str], context: Context) -> tuple[int, int, int]:
    """(nodes, nodes in skippable function bodies, nodes in skippable simple statements)."""
    method = partial(reported_method, context)
    total = in_bodies = in_statements = 0
    for text in texts:
        tree = _parsed(text)
        if tree is None:
            continue
        total += sum(1 for _ in ast.walk(tree))
        finder = _SiteFinder(text, tree)
        if finder.may_hold_idioms():  # the idioms are searched for in every node there
            continue
        model = finder.model
        bound = set(model.importing_names)
        bound.update(r.alias.asname or r.alias.name.partition(".")[0] for r in model.imports)

        def inert(nodes: list[ast.AST], names: set[str] = bound) -> bool:
            for node in nodes:
                if isinstance(node, ast.Name) and node.id in names:
                    return False
                if isinstance(node, ast.Attribute) and method(node.attr):
                    return False
                if isinstance(node, ast.Import | ast.ImportFrom | ast.Global | ast.Nonlocal):
                    return False
                if isinstance(node, ast.NamedExpr):
                    return False
            return True

        pending: list[ast.AST] = list(tree.body)
        while pending:
            node = pending.pop()
            if isinstance(node, _FUNCTIONS):
                body = [n for statement in node.body for n in ast.walk(statement)]
                if inert(body):
                    in_bodies += len(body)
                    continue
            pending.extend(n for n in ast.iter_child_nodes(node) if isinstance(n, ast.stmt))
        for node in ast.walk(tree):
            if isinstance(node, _SIMPLE):
                nodes = list(ast.walk(node))
                if inert(nodes):
                    in_statements += len(nodes)
    return total, in_bodies, in_statements


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", nargs="?", help="a tree of Python files (default: torch's)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if args.root is None:
        import torch

        root = Path(torch.__file__).parent
    else:
        root = Path(args.root)
    datas = [(p, p.read_bytes()) for p in sorted(root.rglob("*.py")) if p.is_file()]
    every = [d.decode("utf-8", "replace") for _, d in datas]
    scanned = [d.decode("utf-8", "replace") for p, d in datas if may_hold_findings(d, p.name)]
    if not scanned:
        print(f"analysis_bound: no Python file the scan would parse under {root}", file=sys.stderr)
        return 2
    context = context_for(newest_version(), None)
    collect_less(FEW_CYCLES)  # as the scan's workers run
    steps: dict[str, tuple[list[str], Callable[[str], object]]] = {
        "floor: ast.parse, every file": (every, _parsed),
        "parse, prefiltered": (scanned, _parsed),
        "+ bare walk": (scanned, lambda t: (tree := _parsed(t)) and bare_walk(tree)),
        "+ name model": (scanned, lambda t: (tree := _parsed(t)) and NameModel(tree)),
        "analysis (analyze_source)": (scanned, lambda t: analyze_source(t, "f.py", context)),
    }
    samples: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(args.rounds):
        for name, (texts, work) in steps.items():
            samples[name].append(_timed(texts, work))
    print(f"{root}: {len(every)} .py files, {len(scanned)} past the prefilter")
    floor = max(statistics.median(samples["floor: ast.parse, every file"]), 1e-9)
    for name, values in samples.items():
        median = statistics.median(values)
        print(f"{name:32} {median:7.2f} s  {median / floor:5.2f}x the floor")
    total, in_bodies, in_statements = skippable(scanned, context)
    total = max(total, 1)  # every file a syntax error: nothing to share out
    print(f"nodes {total:,}; a lazy walk could skip at best:")
    print(f"  function bodies with nothing to find  {in_bodies / total:6.1%}")
    print(f"  simple statements with nothing to find {in_statements / total:6.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
