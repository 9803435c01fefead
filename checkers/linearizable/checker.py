"""The Checker a workload puts in its list: a model name, its initial state and a budget."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from jepsen_py.checkers.linearizable.budget import Budget
from jepsen_py.checkers.linearizable.models import get_model
from jepsen_py.checkers.linearizable.partition import check

from jepsen_py.history import Op
from jepsen_py.protocols import Test


class LinearizableChecker:
    """jepsen_py.protocols.Checker over one model; keys are checked in parallel.

    `test.spec.options["linearizable_time_s"]` / `["linearizable_memory_mb"]` override the budget
    when given (the run command's flags can land there).
    """

    def __init__(
        self,
        model_name: str,
        init: Any = None,
        budget: Budget | None = None,
        *,
        name: str = "linearizable",
        workers: int | None = None,
        **model_options: Any,
    ) -> None:
        self.model_name = model_name
        self.init = init
        self.budget = budget or Budget()
        self.name = name
        self.workers = workers
        self.model_options = model_options
        get_model(model_name, init, **model_options)  # fail at construction, not after a run

    def check(self, test: Test | None, history: Sequence[Op]) -> dict[str, Any]:
        budget = self.budget
        if test is not None:
            opts = getattr(test.spec, "options", {}) or {}
            if "linearizable_time_s" in opts or "linearizable_memory_mb" in opts:
                budget = Budget(
                    float(opts.get("linearizable_time_s", budget.time_s)),
                    int(opts.get("linearizable_memory_mb", budget.memory_mb)),
                )
        model = get_model(self.model_name, self.init, **self.model_options)
        result = check(history, model, budget=budget, workers=self.workers, source="history")
        why = nothing_checked(result)
        if why is not None:
            result.update(valid="unknown", reason=why)
        return result


def nothing_checked(result: dict[str, Any]) -> str | None:
    """Why a valid result checked nothing, or None. No call checked is no verdict: an empty history
    is trivially linearizable, so a run whose every op failed (a failed op did not happen), or
    whose ops are none of the model's, would pass without a single op having been judged."""
    if result.get("valid") is not True or result.get("ops", 0) > 0:
        return None
    model = result.get("model")
    if not result.get("keys_checked"):
        return f"no {model} operation in the history: nothing was checked"
    return (f"no {model} operation left to check (a failed op did not happen; an unanswered read "
            "says nothing): nothing was checked")
