"""Parse-only baselines: read and parse every listed file, nothing else.

    python bench/parse_only.py {ast,libcst} FILE_LIST [-j JOBS]

FILE_LIST holds one path a line. Files are parsed in a process pool of JOBS workers (fork, chunks
of files per task), the same shape of work as `neuron-migrate scan -j JOBS`, so the two compare on
the same cores. A file that does not parse is counted, not fatal.
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import warnings
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor

CHUNK = 16


def _parse_ast(data: bytes) -> None:
    import ast

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        ast.parse(data)


def _parse_libcst(data: bytes) -> None:
    import libcst

    libcst.parse_module(data)


PARSERS: dict[str, Callable[[bytes], None]] = {"ast": _parse_ast, "libcst": _parse_libcst}


def _parse_chunk(job: tuple[str, list[str]]) -> int:
    parser, paths = job
    parse = PARSERS[parser]
    failed = 0
    for path in paths:
        with open(path, "rb") as handle:
            data = handle.read()
        try:
            parse(data)
        except Exception:  # a syntax error or a parser limit: count it and go on
            failed += 1
    return failed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("parser", choices=sorted(PARSERS))
    parser.add_argument("file_list")
    parser.add_argument("-j", "--jobs", type=int, default=1)
    args = parser.parse_args()
    with open(args.file_list, encoding="utf-8") as handle:
        paths = [line.rstrip("\n") for line in handle if line.strip()]
    chunks = [(args.parser, paths[i : i + CHUNK]) for i in range(0, len(paths), CHUNK)]
    if args.jobs <= 1:
        failed = sum(map(_parse_chunk, chunks))
    else:
        if args.parser == "libcst":
            import libcst  # noqa: F401  (load once, before the fork, as scan loads its data)
        context = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(args.jobs, mp_context=context) as pool:
            failed = sum(pool.map(_parse_chunk, chunks))
    print(f"{args.parser}: parsed {len(paths) - failed} of {len(paths)} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
