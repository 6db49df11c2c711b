"""`indented_json.dumps` writes exactly what `json.dumps(indent=N, ensure_ascii=False)` does."""

from __future__ import annotations

import json
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from neuron_migrate.report import indented_json

_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text()
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(), inner, max_size=4)
    ),
    max_leaves=30,
)


@settings(max_examples=400, deadline=None)
@given(_VALUES, st.sampled_from([0, 1, 2, 4]), st.booleans())
def test_the_same_text_as_json_dumps(value, indent, ascii_only):
    assert indented_json.dumps(value, indent, ensure_ascii=ascii_only) == json.dumps(
        value, indent=indent, ensure_ascii=ascii_only
    )


def test_what_it_does_not_encode_goes_to_json_dumps_whole():
    odd = {"keys": {1: "one", None: "none"}, "number": math.pi, "text": 'caf\u00e9 \u2603 "q"'}
    assert indented_json.dumps(odd) == json.dumps(odd, indent=2, ensure_ascii=False)
    assert indented_json.dumps({"set": sorted({3, 1})}) == '{\n  "set": [\n    1,\n    3\n  ]\n}'
