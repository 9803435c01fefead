"""The parallel check inside a process whose SIGTERM handler does not exit (the runner installs one
to heal on SIGTERM): the forked workers must still end when the pool is torn down."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import signal
    from jepsen_py.history import Op
    from jepsen_py.checkers.linearizable import check, get_model

    signal.signal(signal.SIGTERM, lambda *a: None)   # like the runner's SIGTERM-as-interrupt
    ops, t = [], 0
    for key in range(40):
        for v in range(100):
            for typ in ("invoke", "ok"):
                ops.append(Op(len(ops), t, typ, 0, "write", key, v)); t += 1
            for typ in ("invoke", "ok"):
                ops.append(Op(len(ops), t, typ, 0, "read", key, v)); t += 1
    for _ in range(3):
        r = check(ops, get_model("register"), workers=2)
        assert r["valid"] is True, r
    print("done", r["keys_checked"])
    """
)


def test_parallel_check_ends_under_a_sigterm_handler() -> None:
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["done", "40"]
