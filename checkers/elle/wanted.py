"""What a transactional check looks for: Elle's :consistency-models and :anomalies, parsed and
validated in one place for every way they are given (`check --consistency-models/--anomalies`,
`--workload-option consistency_models=/anomalies=`, checkers.elle.check's arguments, the Spark
check's). Each caller passes the labels its user wrote, so the one line of a refusal names them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from jepsen_py.checkers.elle import models

from jepsen_py.errors import BadInput

# How the Python API names them (checkers.elle.check, ElleChecker, check_txn_distributed).
ARGUMENTS = ("consistency_models", "anomalies")
# `--consistency-models none`: no model, only the anomalies asked for.
NONE = "none"


def parse_wanted(consistency_models: str | Iterable[str] | None, anomalies: str | Iterable[str] | None,
                 *, labels: tuple[str, str] = ARGUMENTS) -> tuple[list[str], list[str]]:
    """The models and anomalies asked for, as lists, from text "a,b", a list of names, or None.

    The models default to strict-serializable, or to none when an anomaly is named; "none" (alone)
    names no model, and then an anomaly is needed, else nothing would be checked. Names are
    stripped and kept as given (results use them). BadInput, one line naming `labels` (the models'
    then the anomalies' option as the user gave them) and the known names, for a name that is
    empty or unknown, or a value that is not names."""
    model_label, anomaly_label = labels
    extra = [] if anomalies is None else _names(anomaly_label, anomalies)
    if consistency_models is None:
        wanted = [] if extra else list(models.DEFAULT_MODELS)
    else:
        wanted = _names(model_label, consistency_models)
    if NONE in wanted:
        if wanted != [NONE]:
            raise BadInput(f"{model_label}: {NONE!r} names no model, so it goes alone, not beside "
                           f"{', '.join(m for m in wanted if m != NONE)}")
        if not extra:
            raise BadInput(f"{model_label} {NONE} needs {anomaly_label}: nothing would be checked")
        wanted = []
    unknown = models.unknown_models(wanted)
    if unknown:
        raise BadInput(f"{model_label}: unknown consistency model(s) {', '.join(unknown)}; "
                       f"known: {', '.join(sorted(models.MODELS))}")
    bad = models.unknown_anomalies(extra)
    if bad:
        raise BadInput(f"{anomaly_label}: unknown anomaly(s) {', '.join(bad)}; "
                       f"known: {', '.join(sorted(models.ANOMALIES))}")
    if not wanted and not extra:
        raise BadInput(f"{model_label} names no model and {anomaly_label} no anomaly: nothing would "
                       "be checked")
    return wanted, extra


def _names(label: str, value: str | Iterable[str]) -> list[str]:
    """Text "a,b" (one name, or several separated by commas) or a list of names, each stripped;
    BadInput for an empty name or a value that is neither."""
    if isinstance(value, str):
        names: list[object] = value.split(",")
    elif isinstance(value, Iterable) and not isinstance(value, bytes | bytearray | Mapping):
        names = list(value)
    else:
        raise BadInput(f"{label}: expected names separated by commas, got {value!r}")
    if not all(isinstance(x, str) for x in names):
        raise BadInput(f"{label}: expected names separated by commas, got {value!r}")
    out = [str(x).strip() for x in names]
    if not all(out):
        raise BadInput(f"{label}: an empty name in {value!r}")
    return out
