"""`jepsen-py check FILE --model NAME`: is a stored history linearizable? With --model list-append
or rw-register: which transactional consistency models does it rule out (checkers/elle)?

Reads our history.jsonl, Jepsen's history.edn or text logs, or Porcupine's kv logs; exits 0 valid,
1 invalid, 2 unknown (budget ran out, or every op of the model failed), 254 bad input (one line
naming file:line, or a history with no op of the model).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from jepsen_py.checkers.linearizable import Budget, check, get_model
from jepsen_py.checkers.linearizable.budget import DEFAULT_MEMORY_MB, DEFAULT_TIME_S
from jepsen_py.checkers.linearizable.calls import build_calls
from jepsen_py.checkers.linearizable.checker import nothing_checked
from jepsen_py.checkers.linearizable.models import MODELS
from jepsen_py.errors import BadInput
from jepsen_py.flags import path
from jepsen_py.history import INVOKE, NEMESIS, SAMPLE_PROCESSES, depth_ok
from jepsen_py.importers import FORMATS, check_rules, is_independent, load_history, unwrap_independent
from jepsen_py.inputfile import read_bounded
from jepsen_py.lifetime import signals_raise
from jepsen_py.numbers import MAX_SECONDS, MAX_WORKERS, integer, number
from jepsen_py.numbers import check as check_number
from jepsen_py.store import finite_json
from jepsen_py.verdict import BASIS, basis, exit_code

NAME = "check"
HELP = ("check a history file (jsonl, Jepsen edn or log, Porcupine kv) for linearizability, or a "
        "transactional one for isolation anomalies")

# Transactional workloads, checked by checkers/elle (kept here so --help needs no scipy import;
# tests/checkers/elle/test_cli.py checks it matches the checker's list).
TXN_MODELS = ("list-append", "rw-register")

# Per-format readings that make our verdicts agree with the tool that wrote the format.
_FORMAT_DEFAULTS: dict[str, dict[str, str]] = {
    "jepsen-log": {"failed_cas": "mismatch"},  # Porcupine: a failed cas is a definite answer
    "edn": {"nil_read": "unknown"},  # Knossos: a nil read constrains nothing
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", type=path, help="the history file")
    parser.add_argument("--model", required=True, choices=(*MODELS, *TXN_MODELS),
                        help="the data type's model, or a transactional workload (list-append, rw-register)")
    parser.add_argument("--consistency-models", default=None, metavar="M[,M...]",
                        help="list-append / rw-register: the consistency models to check, as Elle names "
                             "them (default strict-serializable, or none with --anomalies; 'none' for "
                             "none)")
    parser.add_argument("--anomalies", default=None, metavar="A[,A...]",
                        help="list-append / rw-register: anomalies that fail the check besides those the "
                             "models prohibit (Elle's :anomalies; G2 means G2 and every anomaly implying it)")
    parser.add_argument("--wfr-keys", action="store_true",
                        help="rw-register: assume writes follow reads within a transaction (Elle's "
                             ":wfr-keys?)")
    parser.add_argument("--sequential-keys", "--process-keys", dest="sequential_keys", action="store_true",
                        help="rw-register: assume each key is sequentially consistent, and order its "
                             "versions by each process's transactions (Elle's :sequential-keys?)")
    parser.add_argument("--linearizable-keys", action="store_true",
                        help="rw-register: assume each key is linearizable, and order its versions by "
                             "real time (Elle's :linearizable-keys?)")
    parser.add_argument("--exact", action="store_true",
                        help="list-append / rw-register: decide serializable, strict-serializable and "
                             "snapshot-isolation exactly (a SAT solver over the unknown version orders), "
                             "beside the Elle-style search")
    parser.add_argument("--transaction-order", type=path, default=None, metavar="FILE",
                        help="rw-register: a JSON object from each transaction's completion index to its "
                             "position in the database's commit order (Elle's :transaction-order)")
    parser.add_argument("--init", default=None, metavar="JSON",
                        help="the model's initial state as JSON, e.g. 0 or '{\"x\": 0}'")
    parser.add_argument("--format", default="auto", choices=FORMATS, help="history format (default: sniffed)")
    parser.add_argument("--time-limit", type=number(0, MAX_SECONDS, lo_open=True), default=DEFAULT_TIME_S,
                        metavar="S",
                        help=f"seconds before giving up with 'unknown' (default {DEFAULT_TIME_S:g})")
    parser.add_argument("--memory-limit", type=integer(1, 1 << 24), default=DEFAULT_MEMORY_MB, metavar="MB",
                        help=f"memory for the search's memo, MB (default {DEFAULT_MEMORY_MB})")
    parser.add_argument("--workers", type=integer(1, MAX_WORKERS), default=None,
                        help="processes for per-key checks (default: cores)")
    parser.add_argument("--nil-read", choices=("empty", "unknown"), default=None,
                        help="register models: an ok read of null read an empty register (empty) or "
                             "constrains nothing (unknown, Knossos); default by format")
    parser.add_argument("--failed-cas", choices=("drop", "mismatch"), default=None,
                        help="cas-register: a failed cas did not happen (drop, Knossos) or saw a "
                             "different value (mismatch, Porcupine); default by format")
    parser.add_argument("--independent", choices=("auto", "yes", "no"), default="auto",
                        help="values are jepsen.independent [key value] pairs (auto: detect)")
    parser.add_argument("--engine", choices=("local", "spark"), default="local",
                        help="local processes, or a Spark job (spark.distributed_check; for "
                             "list-append / rw-register spark.distributed_txn)")
    parser.add_argument("--master", default=None, help="Spark master URL for --engine spark")
    parser.add_argument("--json", action="store_true", help="print the whole result as JSON")
    parser.add_argument("--allow-truncated", action="store_true",
                        help="check the intact ops of a history (any format) whose tail was cut off "
                             "(a writer killed mid-write) instead of refusing it")


def run(args: argparse.Namespace) -> int:
    """SIGTERM ends the check as Ctrl-C does: the worker pool is terminated on the way out rather
    than left searching after this process is gone."""
    with signals_raise(lambda signum: KeyboardInterrupt(f"signal {signum}")):
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    check_number("--time-limit", args.time_limit, lo=0, hi=MAX_SECONDS, lo_open=True)
    if args.model in TXN_MODELS:
        return _run_txn(args)
    check_number("--memory-limit", args.memory_limit, lo=1)
    if args.workers is not None:
        check_number("--workers", args.workers, lo=1, hi=MAX_WORKERS)
    init = _parse_init(args.init)
    dropped: list[int] = []
    ops, fmt, lines = load_history(args.file, args.format, allow_truncated=args.allow_truncated,
                                   dropped=dropped)
    for line in dropped:
        print(f"jepsen-py: warning: {args.file}:{line}: torn last line dropped (1 line; the writer "
              f"stopped mid-write); checking the {len(ops)} ops before it", file=sys.stderr)
    if args.independent == "yes" or (args.independent == "auto" and args.model != "multi-register"
                                      and is_independent(ops)):
        ops = unwrap_independent(ops)
    check_rules(ops, lines, args.file)  # after unwrapping: a completion's key is checked too
    options = _model_options(args, fmt)
    budget = Budget(args.time_limit, args.memory_limit)
    if args.engine == "spark":
        from jepsen_py.spark.distributed_check import check_distributed

        result = check_distributed(ops, args.model, init, master=args.master, budget=budget,
                                   model_options=options, source=str(args.file))
    else:
        model = get_model(args.model, init, **options)
        try:
            result = check(ops, model, budget=budget, workers=args.workers, source=str(args.file))
        except (TypeError, ValueError, AttributeError, KeyError, IndexError, ArithmeticError) as e:
            raise BadInput(_misfit(ops, lines, args, init, e)) from None
    _judged_something(result, ops, args)
    result.setdefault("file", str(args.file))
    result.setdefault("format", fmt)
    if args.json:
        json.dump(finite_json(result), sys.stdout, indent=2, default=str, allow_nan=False)
        sys.stdout.write("\n")
    else:
        _summary(result, args.file)
    return exit_code(result["valid"])


def _judged_something(result: dict[str, Any], ops: list[Any], args: argparse.Namespace) -> None:
    """Zero ops checked is never "linearizable". No op of the model at all means the history and
    --model do not belong together (or the file has no client ops): bad input, one line. Model ops
    that all dropped out (every one failed) are a real history with nothing to judge: unknown."""
    why = nothing_checked(result)
    if why is None:
        return
    if not result.get("keys_checked"):
        raise _no_model_ops(ops, args)
    result.update(valid="unknown", reason=why)


def _no_model_ops(ops: list[Any], args: argparse.Namespace) -> BadInput:
    """The history holds no op of --model: the file and the model do not belong together (or it
    has no client op at all). Names the client ops it does hold."""
    client: dict[str, int] = {}  # counted here: the Spark engine's result has no "ignored"
    for op in ops:
        if op.type == INVOKE and op.process != NEMESIS and op.process not in SAMPLE_PROCESSES:
            client[str(op.f)] = client.get(str(op.f), 0) + 1
    if client:
        has = ", ".join(f"{n} {f}" for f, n in sorted(client.items()))
        return BadInput(f"{args.file}: no {args.model} operation to check: its client ops are "
                        f"{has}; choose the --model that fits them")
    return BadInput(f"{args.file}: no client operation to check: its {len(ops)} ops are all "
                    "nemesis or observer ops")


def _run_txn(args: argparse.Namespace) -> int:
    """A transactional history: Elle-style inference, cycles, the models it rules out."""
    from jepsen_py.checkers.elle import Inference, check, parse_wanted

    for flag, value in (("--init", args.init), ("--nil-read", args.nil_read),
                        ("--failed-cas", args.failed_cas), ("--workers", args.workers)):
        if value is not None:
            raise BadInput(f"{flag} does not apply to model {args.model!r}")
    for flag, on in (("--wfr-keys", args.wfr_keys), ("--sequential-keys", args.sequential_keys),
                     ("--linearizable-keys", args.linearizable_keys),
                     ("--transaction-order", args.transaction_order is not None)):
        if on and args.model != "rw-register":
            raise BadInput(f"{flag} applies to rw-register only")
    wanted, extra = parse_wanted(args.consistency_models, args.anomalies,
                                 labels=("--consistency-models", "--anomalies"))
    inference = Inference(wfr_keys=args.wfr_keys, sequential_keys=args.sequential_keys,
                          linearizable_keys=args.linearizable_keys,
                          transaction_order=(None if args.transaction_order is None
                                             else _transaction_order(args.transaction_order)))
    dropped: list[int] = []
    ops, fmt, lines = load_history(args.file, args.format, allow_truncated=args.allow_truncated,
                                   dropped=dropped)
    for line in dropped:
        print(f"jepsen-py: warning: {args.file}:{line}: torn last line dropped", file=sys.stderr)
    check_rules(ops, lines, args.file)
    if args.engine == "spark" and args.exact:
        raise BadInput("--exact runs on the local engine only")
    if args.engine == "spark":
        from jepsen_py.spark.distributed_txn import check_txn_distributed

        result = check_txn_distributed(ops, args.model, wanted, anomalies=extra, time_s=args.time_limit,
                                       inference=inference, master=args.master)
    else:
        result = check(ops, args.model, wanted, anomalies=extra, time_s=args.time_limit,
                       inference=inference, exact=args.exact)
    if not any(result["txns"].values()):  # zero transactions checked is never valid
        raise _no_model_ops(ops, args)
    result["file"] = str(args.file)
    result["format"] = fmt
    if args.json:
        json.dump(finite_json(result), sys.stdout, indent=2, default=str, allow_nan=False)
        sys.stdout.write("\n")
    else:
        word = {True: "valid", False: "INVALID"}.get(result["valid"], "unknown")  # type: ignore[arg-type]
        t = result["txns"]
        asked = ", ".join([*wanted, *(f"no {a}" for a in extra)])
        print(f"{args.file}: {word} under {asked} ({args.model}, {t['ok']} ok, {t['fail']} "
              f"failed, {t['info']} indeterminate transactions) ({basis(result) or BASIS['elle-style']})")
        if result.get("unknown_reason"):
            print(f"  unknown: {result['unknown_reason']}")
        if result.get("ignored"):
            left = ", ".join(f"{n} {f}" for f, n in sorted(result["ignored"].items()))
            print(f"  left out (not transactions of clients): {left}")
        for kind in result["anomaly_types"]:
            first = next(a for a in result["anomalies"] + result["other_anomalies"] if a["kind"] == kind)
            allowed = "" if kind in result["prohibited_anomaly_types"] else " (allowed by these models)"
            print(f"  {kind} x{result['anomaly_counts'][kind]}{allowed}: {first['explanation']}")
        if result["not"]:
            print(f"  rules out: {', '.join(result['not'])}"
                  + (f" (and so {', '.join(result['also_not'])})" if result["also_not"] else ""))
    return exit_code(result["valid"])


def _transaction_order(file: Path) -> dict[int, float]:
    """The commit-order file: {"<completion index>": position, ...}."""
    data = read_bounded(file, what="transaction order file")
    try:
        raw = json.loads(data.decode("utf-8"), parse_constant=_no_constant)
    except (json.JSONDecodeError, ValueError, RecursionError) as e:
        raise BadInput(f"{file}: not a JSON object of index -> position ({str(e)[:80]})") from None
    if not isinstance(raw, dict):
        raise BadInput(f"{file}: not a JSON object of index -> position")
    out: dict[int, float] = {}
    for k, v in raw.items():
        try:
            i = int(k)
        except ValueError:
            raise BadInput(f"{file}: {k!r} is not a history index") from None
        if type(v) not in (int, float) or v != v or v in (float("inf"), float("-inf")):
            raise BadInput(f"{file}: the position of index {k} is not a finite number: {v!r}")
        out[i] = v
    return out


def _misfit(ops: list[Any], lines: list[int], args: argparse.Namespace, init: Any,
            error: Exception) -> str:
    """The one line for values the model cannot take (an append of a number to a string, a set
    read that is not a collection, an --init of the wrong shape): replays the ok ops in order from
    the initial state and names the first one the model chokes on."""
    why = f"{type(error).__name__}: {str(error)[:120]}"
    model = get_model(args.model, init, **_model_options(args, "jsonl"))
    line_of = {op.index: (lines[i] if i < len(lines) else "?") for i, op in enumerate(ops)}
    try:
        state = model.init()
    except Exception as e:  # a model's own check of --init
        return f"--init {args.init!r} does not fit model {args.model!r} ({type(e).__name__}: {e})"
    try:
        calls = build_calls([o for o in ops if isinstance(o.process, int)], model).calls
    except Exception:  # the values do not even pair up as calls
        calls = []
    for c in sorted(calls, key=lambda c: c.start):
        try:
            ok, new = model.step(state, c)
        except Exception as e:  # exactly what we are looking for
            src = "its initial state" if args.init is None else f"--init {args.init!r}"
            return (f"{args.file}:{line_of.get(c.index, '?')}: {c.f} {_short(c.input)} -> "
                    f"{_short(c.output)} does not fit model {args.model!r} from {src} "
                    f"({type(e).__name__}: {str(e)[:80]})")
        if ok and c.outcome == "ok":
            state = new
    return f"{args.file}: the values do not fit model {args.model!r} ({why})"


def _short(v: Any) -> str:
    r = repr(v)
    return r if len(r) <= 40 else r[:37] + "..."


def _parse_init(text: str | None) -> Any:
    if text is None:
        return None
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as e:
        raise BadInput(f"--init is not JSON ({e.msg}): {text[:60]!r}") from None
    except (ValueError, RecursionError) as e:
        raise BadInput(f"--init is not usable JSON ({str(e)[:60]})") from None
    if not depth_ok(value):
        raise BadInput("--init is nested too deep")
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _model_options(args: argparse.Namespace, fmt: str) -> dict[str, str]:
    opts = dict(_FORMAT_DEFAULTS.get(fmt, {}))
    if args.nil_read is not None:
        opts["nil_read"] = args.nil_read
    if args.failed_cas is not None:
        opts["failed_cas"] = args.failed_cas
    applicable = {"register": {"nil_read"}, "offsets": {"nil_read"},
                  "cas-register": {"nil_read", "failed_cas"}}.get(args.model, set())
    for k in list(opts):
        if k not in applicable:
            if (k == "nil_read" and args.nil_read is not None) or (k == "failed_cas" and args.failed_cas):
                raise BadInput(f"--{k.replace('_', '-')} does not apply to model {args.model!r}")
            del opts[k]
    return opts


def _summary(result: dict[str, Any], path: Path) -> None:
    v = result["valid"]
    word = {True: "linearizable", False: "NOT linearizable"}.get(v, "unknown")  # type: ignore[arg-type]
    print(f"{path}: {word} ({result.get('model')}, {result.get('keys_checked', 0)} keys, "
          f"{result.get('ops', 0)} ops)")
    if v == "unknown" and result.get("reason"):
        print(f"  unknown: {result['reason']}")
    if result.get("ignored"):
        left_out = ", ".join(f"{n} {f}" for f, n in sorted(result["ignored"].items()))
        print(f"  left out (not {result.get('model')} operations): {left_out}")
    reasons = result.get("unknown_reasons") or {}
    if v is False and reasons:
        print(f"  {len(reasons)} other keys not finished: the verdict was settled by an invalid key")
    else:
        for k, why in reasons.items():
            print(f"  key {k}: unknown: {why}")
    for f in result.get("failures", [])[:5]:
        print(f"  key {f.get('key')!r}: {f.get('explanation')}")
        if f.get("candidates"):
            for c in f["candidates"][:5]:
                print(f"    candidate op {c['op']} ({c['f']} {c['value']!r}): {c['why']}")
