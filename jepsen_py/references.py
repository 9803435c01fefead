"""What --db and the other plugin options name, checked as text: below the plugin loader, so the
spec can canonicalize and check a reference without loading anything."""

from __future__ import annotations

from jepsen_py.errors import BadInput

#: Older names that keep working: our cluster's DB lived in the node's package before it moved to the
#: controller's side.
DB_ALIASES = {"cluster.db:RaftMetadataDB": "jepsen_py.raftdb:RaftMetadataDB"}


def canonical_db(ref: str) -> str:
    """`ref` with an older name replaced by the current one."""
    return DB_ALIASES.get(ref.strip(), ref)


def check_reference(ref: str, option: str) -> str:
    """`ref` if its MODULE (of MODULE:NAME) is a dotted Python module name and NAME a dotted
    attribute: a path (`../etc/passwd:x`) or a relative import (`.x:y`) is refused with one line
    here, not as importlib's TypeError. A name without a colon (an entry point) passes as given."""
    if ":" not in ref:
        return ref
    module_name, _, attr = ref.partition(":")
    if module_name and not all(p.isidentifier() for p in module_name.split(".")):
        raise BadInput(f"{option}: {module_name!r} is not a Python module name "
                       "(MODULE is dotted, like mypkg.db, never a path)")
    if attr and not all(p.isidentifier() for p in attr.split(".")):
        raise BadInput(f"{option}: {attr!r} is not a Python name (in {ref!r})")
    return ref
