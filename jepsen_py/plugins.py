"""Loading the system under test named on the command line: `--db package.module:Name`.

Nothing in jepsen_py/ knows which system is tested; the DB class is found here, by import path or
by an installed entry point in the group `jepsen_py.db` (so `--db etcd` works once a plugin package
registers `etcd = mypkg.etcd:EtcdDB`).
"""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points
from typing import Any

from jepsen_py.errors import BadInput
from jepsen_py.protocols import DB, TestSpec

ENTRY_POINT_GROUP = "jepsen_py.db"


def load_object(ref: str, *, option: str = "--db") -> Any:
    """The object named by `module:attr` (attr may be dotted), or by an entry point name."""
    if ":" not in ref:
        eps = [ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name == ref]
        if not eps:
            raise BadInput(f"{option}: {ref!r} is neither MODULE:CLASS nor an installed "
                           f"'{ENTRY_POINT_GROUP}' entry point")
        return eps[0].load()
    module_name, _, attr = ref.partition(":")
    if not module_name or not attr:
        raise BadInput(f"{option}: expected MODULE:CLASS, got {ref!r}")
    try:
        obj: Any = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name and module_name.startswith(e.name):
            raise BadInput(f"{option}: no module named {module_name!r}") from None
        raise
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise BadInput(f"{option}: module {module_name!r} has no {attr!r}") from None
    return obj


def load_db(ref: str, spec: TestSpec) -> DB:
    """Instantiates the DB class named by `ref` as Cls(spec)."""
    cls = load_object(ref, option="--db")
    if not callable(cls):
        raise BadInput(f"--db: {ref!r} is not a class")
    try:
        db = cls(spec)
    except TypeError as e:
        raise BadInput(f"--db: cannot construct {ref}(spec): {e}") from None
    missing = [m for m in ("setup", "teardown", "client", "log_files")
               if not callable(getattr(db, m, None))]
    if missing:
        raise BadInput(f"--db: {ref} lacks the DB methods {', '.join(missing)}")
    return db


def check_capabilities(db: object, nemesis: object, *, db_name: str) -> None:
    """One line (exit 254) when the nemesis needs an optional DB capability the DB lacks, e.g.
    --nemesis kill with a DB that cannot kill and start, or partition-leader with a leaderless one.
    A nemesis says what it needs with `needs()` -> {capability: what needs it}."""
    from jepsen_py.protocols import CAPABILITIES

    needs_fn = getattr(nemesis, "needs", None)
    needs = dict(needs_fn()) if callable(needs_fn) else {}
    for capability, who in needs.items():
        if capability not in CAPABILITIES:
            raise BadInput(f"{who}: needs an unknown DB capability {capability!r} "
                           f"(known: {', '.join(CAPABILITIES)})")
        methods, does = CAPABILITIES[capability]
        lacking = [m for m in methods if not callable(getattr(db, m, None))]
        if lacking:
            raise BadInput(f"{who} needs a DB that can {does} ({', '.join(methods)}); "
                           f"{db_name} has no {', '.join(lacking)}")
