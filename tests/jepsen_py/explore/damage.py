"""Damage drawn into a valid JSON side file (a corpus entry, a schedule) for the property tests of
their loaders: values replaced by raw JSON text, the file torn, bytes that are not UTF-8."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st

Path_ = tuple[Any, ...]


# Raw JSON text every loader must refuse or take: nesting past any depth limit, numbers JSON
# cannot hold or no field allows, the wrong types, a lone surrogate, any string.
HOSTILE = ["NaN", "Infinity", "-Infinity", "1e999", "9" * 5000, "-1", "0", "1e-9", "2e9", "null", "true",
           "[]", "{}", '""', '"nosuch"', '["nosuch"]', '"\\ud800"', "[1, 2, 3]", "0.5"]


def raw_values(specific: Sequence[str]) -> st.SearchStrategy[str]:
    """Raw JSON text for `damaged`: the HOSTILE values and the loader's own `specific` ones."""
    return st.one_of(
        st.one_of(st.integers(1, 5000).map(lambda n: "[" * n + "]" * n),
                  st.integers(1, 3000).map(lambda n: '{"a":' * n + "1" + "}" * n)),
        st.sampled_from([*HOSTILE, *(v for v in specific if v not in HOSTILE)]),
        st.text(max_size=20).map(json.dumps),
    )


def damaged(draw: st.DrawFn, data: Any, paths: Sequence[Path_], values: st.SearchStrategy[str]) -> bytes:
    """`data` as JSON with up to three of `paths` (keys and list indices) replaced by raw JSON text
    drawn from `values`, maybe torn (the writer stopped mid-file), maybe with a byte that is not
    UTF-8."""
    raws: dict[str, str] = {}
    for i, path in enumerate(draw(st.lists(st.sampled_from(list(paths)), max_size=3, unique=True))):
        target: object = data
        for k in path[:-1]:
            ok = (isinstance(target, dict) and k in target) or (
                isinstance(target, list) and isinstance(k, int) and k < len(target))
            target = target[k] if ok else None  # type: ignore[index]
        last = path[-1]
        if isinstance(target, dict) or (isinstance(target, list) and isinstance(last, int)
                                        and last < len(target)):
            target[last] = f"@@D{i}@@"  # type: ignore[index]
            raws[f'"@@D{i}@@"'] = draw(values)
    text = json.dumps(data)
    for placeholder, value in raws.items():
        text = text.replace(placeholder, value, 1)
    raw = text.encode()
    if draw(st.integers(0, 4)) == 0:
        raw = raw[: draw(st.integers(0, len(raw)))]
    if draw(st.integers(0, 4)) == 0:
        at = draw(st.integers(0, len(raw)))
        raw = raw[:at] + draw(st.sampled_from([b"\xff", b"\xc3", b"\x00", b"\xed\xa0\x80"])) + raw[at:]
    return raw
