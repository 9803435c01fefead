"""checkers/elle/wanted.py: the one parse of the models and anomalies a transactional check asks for."""

from __future__ import annotations

import pytest
from jepsen_py.checkers.elle.wanted import ARGUMENTS, parse_wanted

from jepsen_py.errors import BadInput

CLI = ("--consistency-models", "--anomalies")
OPTION = ("--workload-option consistency_models", "--workload-option anomalies")


@pytest.mark.parametrize(("models", "anomalies", "expected"), [
    (None, None, (["strict-serializable"], [])),
    (None, "G2", ([], ["G2"])),
    (None, [], (["strict-serializable"], [])),  # no anomaly named: the default models
    ("serializable", None, (["serializable"], [])),
    (" serializable , snapshot-isolation", None, (["serializable", "snapshot-isolation"], [])),
    (["read-committed"], ["G-single", "G1"], (["read-committed"], ["G-single", "G1"])),
    (("strong-serializable",), (), (["strong-serializable"], [])),
    ("none", "G1", ([], ["G1"])),
    (["none"], ["G1"], ([], ["G1"])),
    ([], "G2", ([], ["G2"])),
    ("read-committed", "G-single", (["read-committed"], ["G-single"])),
])
def test_names_and_defaults(models: object, anomalies: object, expected: tuple[list[str], list[str]]) -> None:
    assert parse_wanted(models, anomalies, labels=CLI) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize("labels", [CLI, OPTION, ARGUMENTS])
@pytest.mark.parametrize(("models", "anomalies", "which", "message"), [
    ("serialisable", None, 0, ": unknown consistency model(s) serialisable; known: "),
    ("serializable,bogus,also-bogus", None, 0, ": unknown consistency model(s) also-bogus, bogus; known: "),
    (None, "G3", 1, ": unknown anomaly(s) G3; known: "),
    ("none", None, 0, " none needs {a}: nothing would be checked"),
    ("none,serializable", "G2", 0, ": 'none' names no model, so it goes alone, not beside serializable"),
    ([], None, 0, " names no model and {a} no anomaly: nothing would be checked"),
    ("serializable,", None, 0, ": an empty name in 'serializable,'"),
    ("", "G2", 0, ": an empty name in ''"),
    (None, "G2,,G1", 1, ": an empty name in 'G2,,G1'"),
    (3, None, 0, ": expected names separated by commas, got 3"),
    (None, ["G2", 1], 1, ": expected names separated by commas, got ['G2', 1]"),
    (None, {"G2": 1}, 1, ": expected names separated by commas, got {{'G2': 1}}"),
])
def test_refusals_are_one_line_naming_the_option(labels: tuple[str, str], models: object, anomalies: object,
                                                 which: int, message: str) -> None:
    with pytest.raises(BadInput) as e:
        parse_wanted(models, anomalies, labels=labels)  # type: ignore[arg-type]
    text = str(e.value)
    assert text.startswith(labels[which] + message.format(a=labels[1]))
    assert "\n" not in text


def test_the_known_names_are_listed() -> None:
    with pytest.raises(BadInput, match=r"known: .*\bserializable\b.*\bstrict-serializable\b"):
        parse_wanted("serialisable", None, labels=CLI)
    with pytest.raises(BadInput, match=r"known: .*\bG-single\b.*\bG2-item\b"):
        parse_wanted(None, "G3", labels=CLI)
