"""`--workload-option` values: JSON with finite numbers only, and our workloads' knobs in range."""

from __future__ import annotations

import math

import pytest
from jepsen_py.workloads import knobs

from jepsen_py.errors import BadInput


@pytest.mark.parametrize(("text", "value"), [
    ("4", 4), ("0.8", 0.8), ("true", True), ('"x"', "x"), ("[1, 2]", [1, 2]),
    ("NaN", "NaN"), ("Infinity", "Infinity"), ("-Infinity", "-Infinity"), ("1e999", "1e999"),
    ("[1, NaN]", "[1, NaN]"), ("abc", "abc"),
])
def test_values_are_json_with_finite_numbers_only(text: str, value: object) -> None:
    got = knobs.parse_value(text)
    assert got == value and type(got) is type(value)


def test_a_key_no_workload_of_ours_reads_passes_through() -> None:
    assert knobs.check("my_plugin_knob", "NaN") == "NaN"
    assert knobs.check("my_plugin_knob", -3) == -3


def test_in_range_knobs_are_taken_as_their_kind() -> None:
    assert knobs.check("active_keys", 4) == 4
    assert knobs.check("active_keys", 4.0) == 4 and isinstance(knobs.check("active_keys", 4.0), int)
    assert knobs.check("read_fraction", 0) == 0 and knobs.check("read_fraction", 1) == 1
    assert knobs.check("linearizable", False) is False
    assert knobs.check("final_delay", 0.5) == 0.5


@pytest.mark.parametrize(("key", "value", "words"), [
    ("active_keys", "NaN", "expected a whole number"),
    ("active_keys", math.inf, "expected a whole number"),
    ("active_keys", True, "expected a whole number"),
    ("active_keys", 0, "must be 1..100000"),
    ("active_names", 10**11, "must be 1..100000"),
    ("describe_topics", 5000, "must be 1..1000"),
    ("ops_per_name", -1, "must be 1..1000000000"),
    ("cas_fraction", -0.1, "must be 0..1"),
    ("dequeue_fraction", [0.5], "expected a number"),
    ("final_delay", 10**9, "must be 0..604800"),
    ("linearizable", 1, "expected true or false"),
])
def test_out_of_range_knobs_are_one_line(key: str, value: object, words: str) -> None:
    with pytest.raises(BadInput) as e:
        knobs.check(key, value)
    assert str(e.value).startswith(f"--workload-option {key}: ") and words in str(e.value)


def test_every_knob_our_workloads_read_is_checked() -> None:
    """A knob read with o.get("...") in workloads/ but missing here would take any value again."""
    import re
    from pathlib import Path

    root = Path(knobs.__file__).parent
    read = {m for f in root.glob("*.py") for m in re.findall(r'\bo\.get\("([a-z_]+)"', f.read_text())}
    assert read and read <= set(knobs.KNOBS), read - set(knobs.KNOBS)
