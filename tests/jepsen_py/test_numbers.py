"""Every numeric flag of every command: NaN, infinities, zero, negatives and absurd sizes are
refused with one line naming the flag (exit 254), before anything runs."""

from __future__ import annotations

import pytest

from jepsen_py import numbers
from jepsen_py.cli import main
from jepsen_py.errors import BadInput

BAD_FLOATS = ["nan", "NaN", "inf", "-inf", "1e400", "-1", "x", ""]


@pytest.mark.parametrize(("command", "flag", "bad"), [
    *((["check", "/dev/null", "--model", "register"], "--time-limit", b) for b in [*BAD_FLOATS, "0"]),
    *((["check", "/dev/null", "--model", "register"], "--workers", b)
      for b in ["0", "-3", "nan", "1.5", "99999"]),
    *((["check", "/dev/null", "--model", "register"], "--memory-limit", b) for b in ["0", "-1", "inf"]),
    *((["run"], "--time-limit", b) for b in [*BAD_FLOATS, "0"]),
    *((["run"], "--rate", b) for b in ["nan", "inf", "-1"]),
    *((["run"], "--nemesis-interval", b) for b in ["nan", "0", "-inf"]),
    *((["run"], "--op-timeout", b) for b in ["nan", "0"]),
    *((["run"], "--recovery-timeout", b) for b in ["nan", "-1"]),
    *((["run"], "--node-count", b) for b in ["0", "-2", "nan", "1" + "0" * 5000]),
    *((["run"], "--test-count", b) for b in ["0", "-1"]),
    *((["run"], "--seed", b) for b in ["-1", "1" + "0" * 5000, "nan"]),
    *((["run"], "--ssh-port", b) for b in ["0", "65536", "-22", "nan"]),
    *((["serve"], "--port", b) for b in ["-1", "65536", "nan"]),
    *((["run"], "--availability-min-ok-fraction", b) for b in ["nan", "1.5", "-0.1"]),
    *((["run"], "--availability-max-recovery-s", b) for b in ["nan", "inf", "-1"]),
    *((["run"], "--availability-max-unavailable-s", b) for b in ["nan", "0"]),
    *((["run"], "--availability-max-terms-per-minute", b) for b in ["inf", "0"]),
    *((["test-all"], "--time-limit", b) for b in ["nan", "inf", "0"]),
    *((["test-all"], "--parallel", b) for b in ["0", "-1"]),
    *((["test-all"], "--node-count", b) for b in ["0", "nan"]),
    *((["cleanup"], "--ssh-port", b) for b in ["0", "70000"]),
])
def test_bad_numbers_are_refused_naming_the_flag(command, flag, bad, capsys) -> None:
    with pytest.raises(SystemExit) as e:
        main([*command, f"{flag}={bad}"])
    assert e.value.code == 254
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert flag in err and "Traceback" not in err


def test_check_helper() -> None:
    assert numbers.check("--x", 2.5, lo=0, hi=3) == 2.5
    for v in (float("nan"), float("inf"), -1, 4, True, "3"):
        with pytest.raises(BadInput, match="--x"):
            numbers.check("--x", v, lo=0, hi=3)  # type: ignore[arg-type]
    with pytest.raises(BadInput, match="> 0"):
        numbers.check("--x", 0, lo=0, lo_open=True)


def test_time_limit_nan_no_longer_switches_the_budget_off(tmp_path, capsys) -> None:
    h = tmp_path / "h.jsonl"
    h.write_text('{"index":0,"time":0,"type":"invoke","process":0,"f":"write","value":1}\n'
                 '{"index":1,"time":1,"type":"ok","process":0,"f":"write","value":1}\n')
    assert main(["check", str(h), "--model", "register", "--time-limit", "5"]) == 0
    with pytest.raises(SystemExit) as e:
        main(["check", str(h), "--model", "register", "--time-limit", "nan"])
    assert e.value.code == 254
