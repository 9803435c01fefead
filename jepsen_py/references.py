"""What --db and the other plugin options name: checked as text (so the spec can canonicalize and
check a reference without loading anything), and the one way a named module is imported (the working
directory first, a failure in one line). Below the plugin loader, so the backend registry loads a
`--backend MODULE:CLASS` the way jepsen_py.plugins loads every other plugin."""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

from jepsen_py.errors import BadInput, describe

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


def current_dir_importable() -> None:
    """Puts the working directory first on sys.path, as `python -m` does (console scripts don't)."""
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)


def import_module(module_name: str, option: str, ref: str) -> Any:
    """The module `ref` (given to `option`) names; BadInput (one line) for any failure to import it."""
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name and (module_name == e.name or module_name.startswith(e.name + ".")):
            raise BadInput(f"{option}: no module named {module_name!r}") from None
        raise BadInput(f"{option}: {ref}: importing {module_name} failed: it needs the module "
                       f"{e.name or '?'!r}, which is not installed") from None
    except (Exception, SystemExit) as e:
        raise BadInput(f"{option}: {ref}: importing {module_name} raised {describe(e)}") from None
