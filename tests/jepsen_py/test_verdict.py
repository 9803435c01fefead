"""Verdicts merge as Jepsen's do (false beats unknown beats true) and map to the exit codes a CI gate
reads."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jepsen_py.errors import (
    EXIT_BAD_INPUT,
    EXIT_FRAMEWORK,
    BadInput,
    EnvironmentProblem,
    FrameworkFailure,
)
from jepsen_py.verdict import basis, exit_code, merge

verdicts = st.sampled_from([True, False, "unknown"])


@pytest.mark.parametrize(("vs", "expected"), [
    ([], True),
    ([True, True], True),
    ([True, "unknown"], "unknown"),
    (["unknown", False, True], False),
    ([False, "unknown"], False),
])
def test_merge(vs: list, expected: object) -> None:
    assert merge(vs) == expected


@given(st.lists(verdicts))
def test_merge_is_the_worst_and_order_free(vs: list) -> None:
    m = merge(vs)
    assert m == merge(reversed(vs))
    if False in vs:
        assert m is False
    elif "unknown" in vs:
        assert m == "unknown"
    else:
        assert m is True


def test_merge_rejects_non_verdicts() -> None:
    with pytest.raises(ValueError, match="not a verdict"):
        merge([True, None])  # type: ignore[list-item]


def test_exit_codes() -> None:
    assert (exit_code(True), exit_code(False), exit_code("unknown")) == (0, 1, 2)
    assert BadInput("x").exit_code == EXIT_BAD_INPUT == 254
    assert EnvironmentProblem("x").exit_code == 254
    assert FrameworkFailure("x").exit_code == EXIT_FRAMEWORK == 255


def test_what_a_transactional_verdict_rests_on_is_said_one_way() -> None:
    """The run summary and `check` word a transactional checker's "verdict" alike; a result that
    does not say (another checker's, a plugin's odd value) gets no words."""
    assert basis({"verdict": "exact"}) == "decided exactly"
    assert basis({"verdict": "elle-style"}) == "evidence: Elle-style"
    assert basis({"verdict": "elle-style and exact"}) == "exact where it can be, else Elle-style"
    odd = ({}, {"verdict": 1}, {"verdict": ["exact"]}, {"verdict": "x"}, None)
    assert [basis(r) for r in odd] == [None] * len(odd)
