"""Which version of the system under test a run exercised, recorded in test.json at run start.

Runs of different builds must not be counted together. `--db-version` says it outright; without it,
for our own cluster (whose code the controller uploads to every node) it is `git describe --always
--dirty` of the checkout that code comes from, computed on the controller before anything starts, so
a run of uncommitted changes says so. Anything else is "unversioned".
"""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path

from jepsen_py.references import canonical_db

UNVERSIONED = "unversioned"
# The DB whose code is uploaded from this checkout (spec.DEFAULT_DB names it for the command line).
UPLOADED_FROM_CHECKOUT = ("jepsen_py.raftdb", "jepsen_py.cluster.db")


def git_describe(path: Path) -> str | None:
    """`git describe --always --dirty` of the checkout holding `path`, if `path` is tracked in one."""
    path = Path(path)
    where = path if path.is_dir() else path.parent
    try:
        tracked = subprocess.run(["git", "-C", str(where), "ls-files", "--", "."], capture_output=True,
                                 text=True, timeout=30)
        if tracked.returncode != 0 or not tracked.stdout.strip():
            return None  # not a git checkout (an installed wheel), or not part of this one
        d = subprocess.run(["git", "-C", str(where), "describe", "--always", "--dirty"],
                           capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    out = d.stdout.strip()
    return out if d.returncode == 0 and out else None


def db_version(db_ref: str, explicit: str | None = None) -> str:
    """The version to record for the DB named `db_ref` (MODULE:CLASS)."""
    if explicit:
        return explicit

    module = canonical_db(db_ref).split(":", 1)[0]
    if module not in UPLOADED_FROM_CHECKOUT:
        return UNVERSIONED
    try:
        found = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return UNVERSIONED
    if found is None or not found.origin:
        return UNVERSIONED
    return git_describe(Path(found.origin).parent) or UNVERSIONED
