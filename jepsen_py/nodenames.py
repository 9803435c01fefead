"""Node names: one rule for every source (-n/--node, --nodes, --nodes-file, schedule files, a test
built in code, a spec a plugin DB handed back).

A node name becomes a directory of the run (nodes/<node>/), a container and host name, and an
argument of commands on the nodes, so it is a word a DNS label could be: a letter or digit, then
letters, digits, '.', '_' or '-', at most 63 characters. A name with '/' or '..' would put node logs
outside the run directory, and a 300-character one is longer than a file name may be.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from jepsen_py.errors import BadInput, quote

MAX_LENGTH = 63
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
RULE = f"a letter or digit, then letters, digits, . _ -; at most {MAX_LENGTH} characters"


def check_node_name(name: object, where: str) -> str:
    """`name` if it is a usable node name; else BadInput naming `where` (a flag or a file)."""
    if not isinstance(name, str) or len(name) > MAX_LENGTH or not _NAME.fullmatch(name):
        raise BadInput(f"{where}: {quote(name)} is not a usable node name ({RULE})")
    return name


def check_node_names(names: Sequence[object], where: str, *, at_least_one: bool = True) -> list[str]:
    """Every name usable, none twice, and at least one unless a test without nodes is allowed (the
    runner takes one: a DB that needs no nodes)."""
    if isinstance(names, str) or not isinstance(names, Sequence):
        raise BadInput(f"{where}: expected a list of node names, got {type(names).__name__}")
    if at_least_one and not names:
        raise BadInput(f"{where}: no node names given")
    out = [check_node_name(n, where) for n in names]
    dup = sorted(n for n, k in Counter(out).items() if k > 1)
    if dup:
        raise BadInput(f"{where}: {', '.join(dup)} named more than once")
    return out
