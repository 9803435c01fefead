"""Elle's consistency-model tests, ported (jepsen-io/elle, test/elle/consistency_model_test.clj):
the relations between anomalies and models that every verdict rests on. Models compare by
canonical name: Elle's friendly name for PL-SS is strong-serializable, ours strict-serializable."""

from __future__ import annotations

import pytest
from jepsen_py.checkers.elle import models

# all-anomalies-test: every anomaly Elle knows (ours adds garbage-read and the two unknown kinds)
ELLE_ANOMALIES = {
    "G-MSR",
    "G-SI",
    "G-SIb",
    "G-cursor",
    "G-monotonic",
    "G-single-item",
    "G-update",
    "G0",
    "G1b",
    "GSIa",
    "PL-1-cycle-exists",
    "PL-2-cycle-exists",
    "PL-2.99-cycle-exists",
    "PL-3-cycle-exists",
    "PL-SI-cycle-exists",
    "PL-SS-cycle-exists",
    "cyclic-versions",
    "dirty-update",
    "duplicate-elements",
    "future-read",
    "incompatible-order",
    "internal",
    "lost-update",
    "predicate-read-miss",
    "strong-PL-1-cycle-exists",
    "strong-PL-2-cycle-exists",
    "strong-session-PL-1-cycle-exists",
    "strong-session-PL-2-cycle-exists",
    "strong-session-serializable-cycle-exists",
    "strong-session-snapshot-isolation-cycle-exists",
    "strong-snapshot-isolation-cycle-exists",
    "G-nonadjacent-item",
    "G-single-item-process",
    "G1a",
    "G1c",
    "write-skew",
    "G-nonadjacent-item-process",
    "G-single",
    "G-single-item-realtime",
    "G1",
    "G2-item",
    "G-nonadjacent",
    "G-nonadjacent-item-realtime",
    "GSIb",
    "G2",
    "GSI",
    "G0-process",
    "G1c-process",
    "G-single-process",
    "G1-process",
    "G2-item-process",
    "G-nonadjacent-process",
    "G2-process",
    "G0-realtime",
    "G1c-realtime",
    "G-single-realtime",
    "G1-realtime",
    "G2-item-realtime",
    "G-nonadjacent-realtime",
    "G2-realtime",
}


def friendly(ms: set[str]) -> set[str]:
    return {models.canonical(m) for m in ms}


def test_all_anomalies() -> None:
    assert {
        "garbage-read",
        "reordered-appends",
        "empty-transaction-graph",
        "cycle-search-timeout",
    } == models.ANOMALIES - ELLE_ANOMALIES
    assert ELLE_ANOMALIES <= models.ANOMALIES


def test_all_implied_anomalies() -> None:
    assert models.implied(["G-SI"]) == {"G-SI"}


@pytest.mark.parametrize(
    "given, weakest",
    [
        ([], set()),
        (["serializable", "strict-serializable"], {"serializable"}),
        (
            ["repeatable-read", "read-committed", "sequential", "read-your-writes"],
            {"read-your-writes", "read-committed"},
        ),
        (["serializable", "read-atomic"], {"read-atomic"}),
        (["read-atomic", "serializable"], {"read-atomic"}),
    ],
)
def test_weakest_models(given: list[str], weakest: set[str]) -> None:
    assert models.weakest(given) == friendly(weakest)


@pytest.mark.parametrize(
    "given, strongest",
    [
        ([], set()),
        (["serializable", "strong-serializable", "strict-serializable"], {"strong-serializable"}),
        (
            ["repeatable-read", "read-committed", "sequential", "read-your-writes"],
            {"repeatable-read", "sequential"},
        ),
        (["serializable", "read-atomic"], {"serializable"}),
    ],
)
def test_strongest_models(given: list[str], strongest: set[str]) -> None:
    assert models.strongest(given) == friendly(strongest)


def test_anomalies_prohibited_by_read_committed() -> None:
    assert models.prohibited(["read-committed"]) == {
        "dirty-update",
        "G1a",
        "G1b",
        "G1c",
        "G1",
        "G0",
        "PL-1-cycle-exists",
        "PL-2-cycle-exists",
        "cyclic-versions",
        "duplicate-elements",
        "incompatible-order",
        "future-read",
        "garbage-read",
        "reordered-appends",
    }  # beyond Elle: they imply G1a and cyclic-versions


def test_unknown_model_is_refused() -> None:
    assert models.unknown_models(["stricct-snappshot-isolation"]) == ["stricct-snappshot-isolation"]


@pytest.mark.parametrize(
    "anomalies, impossible",
    [
        (
            ["G-single"],
            {
                "consistent-view",
                "forward-consistent-view",
                "strong-serializable",
                "serializable",
                "snapshot-isolation",
                "strong-session-serializable",
                "strong-session-snapshot-isolation",
                "strong-snapshot-isolation",
                "update-serializable",
            },
        ),
        (
            ["G-SI"],
            {
                "snapshot-isolation",
                "serializable",
                "strong-serializable",
                "strong-session-serializable",
                "strong-session-snapshot-isolation",
                "strong-snapshot-isolation",
            },
        ),
        (
            ["dirty-update"],
            {
                "read-committed",
                "monotonic-atomic-view",
                "snapshot-isolation",
                "repeatable-read",
                "update-atomic",
                "serializable",
                "strong-serializable",
                "update-serializable",
                "cursor-stability",
                "forward-consistent-view",
                "consistent-view",
                "monotonic-view",
                "monotonic-snapshot-read",
                "causal-cerone",
                "parallel-snapshot-isolation",
                "prefix",
                "read-atomic",
                "strong-session-read-committed",
                "strong-session-serializable",
                "strong-session-snapshot-isolation",
                "strong-read-committed",
                "strong-snapshot-isolation",
            },
        ),
        (
            ["internal"],
            {
                "causal-cerone",
                "parallel-snapshot-isolation",
                "prefix",
                "read-atomic",
                "update-atomic",
                "serializable",
                "snapshot-isolation",
                "strong-serializable",
                "strong-session-serializable",
                "strong-session-snapshot-isolation",
                "strong-snapshot-isolation",
            },
        ),
    ],
)
def test_anomaly_to_impossible_models(anomalies: list[str], impossible: set[str]) -> None:
    assert models.ruled_out(anomalies) == friendly(impossible)


@pytest.mark.parametrize(
    "anomalies, not_, also_not",
    [
        ([], set(), set()),
        (
            ["cyclic-versions"],
            {"read-uncommitted"},
            {
                "read-committed",
                "snapshot-isolation",
                "causal-cerone",
                "consistent-view",
                "cursor-stability",
                "forward-consistent-view",
                "monotonic-atomic-view",
                "monotonic-snapshot-read",
                "monotonic-view",
                "parallel-snapshot-isolation",
                "prefix",
                "read-atomic",
                "repeatable-read",
                "update-atomic",
                "serializable",
                "strong-read-committed",
                "strong-read-uncommitted",
                "strong-serializable",
                "strong-session-read-committed",
                "strong-session-read-uncommitted",
                "strong-session-serializable",
                "strong-session-snapshot-isolation",
                "strong-snapshot-isolation",
                "update-serializable",
            },
        ),
        (
            ["internal"],
            {"read-atomic"},
            {
                "causal-cerone",
                "parallel-snapshot-isolation",
                "prefix",
                "update-atomic",
                "serializable",
                "snapshot-isolation",
                "strong-serializable",
                "strong-session-serializable",
                "strong-session-snapshot-isolation",
                "strong-snapshot-isolation",
            },
        ),
        (
            ["G1a"],
            {"read-committed"},
            {
                "read-atomic",
                "update-atomic",
                "causal-cerone",
                "consistent-view",
                "cursor-stability",
                "forward-consistent-view",
                "monotonic-atomic-view",
                "monotonic-snapshot-read",
                "monotonic-view",
                "parallel-snapshot-isolation",
                "prefix",
                "repeatable-read",
                "serializable",
                "snapshot-isolation",
                "strong-read-committed",
                "strong-snapshot-isolation",
                "strong-serializable",
                "strong-session-read-committed",
                "strong-session-serializable",
                "strong-session-snapshot-isolation",
                "update-serializable",
            },
        ),
        (
            ["G-single"],
            {"consistent-view"},
            {
                "snapshot-isolation",
                "serializable",
                "strong-serializable",
                "strong-session-snapshot-isolation",
                "strong-snapshot-isolation",
                "strong-session-serializable",
                "forward-consistent-view",
                "update-serializable",
            },
        ),
        (
            ["G2", "internal"],
            {"read-atomic"},
            {
                "update-atomic",
                "causal-cerone",
                "parallel-snapshot-isolation",
                "prefix",
                "serializable",
                "snapshot-isolation",
                "strong-serializable",
                "strong-session-serializable",
                "strong-session-snapshot-isolation",
                "strong-snapshot-isolation",
            },
        ),
        (["G-single-realtime"], {"strong-snapshot-isolation"}, {"strong-serializable"}),
    ],
)
def test_friendly_boundary(anomalies: list[str], not_: set[str], also_not: set[str]) -> None:
    b = models.boundary(anomalies)
    assert friendly(set(b["not"])) == friendly(not_) and friendly(set(b["also_not"])) == friendly(also_not)


def test_friendly_boundary_lost_update() -> None:
    assert friendly(set(models.boundary(["lost-update"])["not"])) == friendly(
        {"update-atomic", "cursor-stability"}
    )


def test_all_impossible_models() -> None:
    assert models.and_stronger(["strong-session-serializable"]) == {"strong-session-serializable", "PL-SS"}


def test_rola_is_update_atomic() -> None:
    assert models.canonical("ROLA") == "update-atomic"
    assert models.prohibited(["ROLA"]) == models.prohibited(["update-atomic"])
