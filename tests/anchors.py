"""Where Porcupine's anchor histories are: $JEPSEN_PY_PORCUPINE_ANCHORS, else shared/ beside this
checkout (as CI lays it), else /work/shared."""

from __future__ import annotations

import os
from pathlib import Path

_BESIDE = Path(__file__).resolve().parents[2] / "shared" / "anchors" / "porcupine"


def anchors_dir() -> Path:
    given = os.environ.get("JEPSEN_PY_PORCUPINE_ANCHORS")
    if given:
        return Path(given)
    return _BESIDE if _BESIDE.is_dir() else Path("/work/shared/anchors/porcupine")


ANCHORS = anchors_dir()
