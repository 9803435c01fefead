"""jepsen-py: Jepsen-style fault-injection testing.

The controller: CLI, history, generators, runner, store.
"""

import os as _os

#: the repository's top-level folders, installed as jepsen_py.<name> (pyproject.toml's package-dir)
NAMESPACED_FOLDERS = ("checkers", "cluster", "nemeses", "spark", "workloads")


def _checkout_root() -> str | None:
    """The checkout this package was imported from, when its folders sit beside jepsen_py/.

    Installed, they are inside jepsen_py/. In a checkout they are subpackages all the same, taken
    from the same checkout as jepsen_py itself: on PYTHONPATH alone, or with an editable install
    of another checkout on the machine, whose finder would otherwise supply them.
    """
    here = _os.path.dirname(_os.path.abspath(__file__))
    root = _os.path.dirname(here)
    if _os.path.isdir(_os.path.join(here, NAMESPACED_FOLDERS[0])):
        return None
    if not _os.path.isfile(_os.path.join(root, "pyproject.toml")):
        return None
    if all(_os.path.isfile(_os.path.join(root, n, "__init__.py")) for n in NAMESPACED_FOLDERS):
        return root
    return None


_root = _checkout_root()
if _root is not None:
    __path__.append(_root)
del _root
