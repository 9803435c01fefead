"""The step function (being filled in: this commit only fixes the interface RawNode relies on)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .config import Config
from .messages import HardState, Message, SoftState
from .storage import MemoryStorage


class Raft:
    def __init__(self, id: str, peers: Sequence[str], storage: MemoryStorage, config: Config) -> None:
        raise NotImplementedError("the Raft step function lands in the next commit")

    def tick(self) -> None:
        raise NotImplementedError

    def step(self, msg: Message) -> None:
        raise NotImplementedError

    def soft_state(self) -> SoftState:
        raise NotImplementedError

    def hard_state(self) -> HardState:
        raise NotImplementedError

    def status(self) -> dict[str, Any]:
        raise NotImplementedError
