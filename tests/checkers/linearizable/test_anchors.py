"""Every history in Porcupine's test data gets the verdict Porcupine's own tests assert
(/work/shared/anchors/porcupine/expected.tsv): 102 etcd Jepsen logs and 6 kv logs."""

from __future__ import annotations

import pytest
from jepsen_py.checkers.linearizable import check, get_model

from jepsen_py.errors import BadInput
from jepsen_py.importers import load_history
from tests.anchors import ANCHORS
from tests.conftest import require


def _expected() -> list[tuple[str, bool]]:
    tsv = ANCHORS / "expected.tsv"
    if not tsv.exists():
        return []
    rows = [ln.split("\t") for ln in tsv.read_text().splitlines()[1:] if ln.strip()]
    return [(name, verdict.strip() == "true") for name, verdict in rows]


EXPECTED = _expected()


def test_anchor_set_is_complete():
    if not EXPECTED:
        require(f"the Porcupine anchors at {ANCHORS}", False)
    assert sum(1 for n, _ in EXPECTED if n.startswith("jepsen/")) == 102
    assert sum(1 for n, _ in EXPECTED if n.startswith("kv/")) == 6


@pytest.mark.parametrize(("name", "expected"), EXPECTED, ids=[n for n, _ in EXPECTED])
def test_anchor_verdict(name, expected):
    ops, fmt, _ = load_history(ANCHORS / name)
    if name.startswith("jepsen/"):
        assert fmt == "jepsen-log"
        # Porcupine's reading (a failed cas saw another value) and Knossos's (it did not happen)
        # agree on every one of these files.
        for failed_cas in ("mismatch", "drop"):
            r = check(ops, get_model("cas-register", failed_cas=failed_cas), workers=1)
            assert r["valid"] is expected, (failed_cas, r["failures"][:1])
    else:
        assert fmt == "porcupine-kv"
        # Porcupine's verdict is its early exit's: the search stops at the first invalid key. Every
        # key of c50-bad checked takes a minute more (two of its keys are still undecided when the
        # search's budget runs out); the full per-key report is test_every_key's.
        r = check(ops, get_model("kv"), stop_at_first_failure=True)
        assert r["valid"] is expected
        assert 1 < r["keys_checked"] <= 10
    if not expected:
        f = r["failures"][0]
        assert f["op"] is not None and f["explanation"]
        assert r["anomalies"][0]["kind"] == "nonlinearizable"


def test_empty_etcd_log_is_refused_as_input_though_no_ops_check_valid():
    """Porcupine calls its empty log linearizable; as a gate's input an empty file is no history
    (a CI job that lost its log must not pass), while the checker itself still finds no ops valid."""
    if not EXPECTED:
        require(f"the Porcupine anchors at {ANCHORS}", False)
    with pytest.raises(BadInput, match="no operations"):
        load_history(ANCHORS / "jepsen/etcd_095.log")
    assert check([], get_model("cas-register"))["valid"] is True
