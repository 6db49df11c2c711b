"""`scan.analyzer.memo.Memo`: each key computed once; a cycle cut where it closes; a result that
leant on a cut further up kept only for the query that made it."""

from __future__ import annotations

from collections.abc import Callable

from neuron_migrate.scan.analyzer.memo import Memo


def _largest(
    memo: Memo[int], edges: dict[str, list[str]], own: dict[str, int], log: list[str]
) -> Callable[[str], int]:
    """The largest own value reachable from a key, through `memo`; each computation logged."""

    def value(key: str) -> int:
        log.append(key)
        return max([own.get(key, 0), *(memo.get(n, value, n) for n in edges.get(key, []))])

    return value


def test_a_diamond_chain_computes_each_key_once() -> None:
    links = 300  # 2**300 paths from the top to the bottom
    edges = {f"a{i}": [f"a{i - 1}", f"a{i - 1}"] for i in range(1, links + 1)}
    memo: Memo[int] = Memo(cut=0)
    log: list[str] = []
    value = _largest(memo, edges, {"a0": 3}, log)
    for i in range(0, links + 1, 50):  # (in steps: the recursion stays within Python's stack)
        assert memo.get(f"a{i}", value, f"a{i}") == 3
    assert sorted(log) == sorted(edges.keys() | {"a0"})


def test_a_cycle_is_cut_where_it_closes() -> None:
    edges = {"a": ["b"], "b": ["a", "c"], "c": ["c"]}  # a <-> b; c on itself
    own = {"a": 1, "c": 5}
    memo: Memo[int] = Memo(cut=0)
    log: list[str] = []
    value = _largest(memo, edges, own, log)
    assert memo.get("a", value, "a") == 5
    assert log == ["a", "b", "c"]
    # c and a leant on no cut above them: kept. b leant on a's, cut while a was open.
    assert "a" in memo and "c" in memo and "b" not in memo
    assert memo.get("b", value, "b") == 5  # from b this time; a and c answer from the memo
    assert log == ["a", "b", "c", "b"]
    assert "b" in memo


def test_within_one_query_a_provisional_result_is_reused() -> None:
    # a -> b, a -> d; b -> a (a cycle through a), d -> b: b is provisional while a is open,
    # and d reads it rather than walking the cycle again.
    edges = {"a": ["b", "d"], "b": ["a"], "d": ["b"]}
    memo: Memo[int] = Memo(cut=0)
    log: list[str] = []
    value = _largest(memo, edges, {"b": 2}, log)
    assert memo.get("a", value, "a") == 2
    assert log == ["a", "b", "d"]
