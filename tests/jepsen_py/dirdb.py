"""A DB whose teardown depends on a setting: it wipes the directory `--db-option dir=...` names,
as a DB run with its data somewhere other than its default would (what `cleanup --db` must be
told the same way the run was)."""

from __future__ import annotations

from jepsen_py.errors import BadInput
from jepsen_py.protocols import Client, Test, TestSpec

DEFAULT_DIR = "/var/lib/dirdb"


class DirDB:
    @staticmethod
    def db_options() -> dict[str, str]:
        return {"dir": f"the data directory (default {DEFAULT_DIR})"}

    def __init__(self, spec: TestSpec) -> None:
        self.dir = spec.db_options.get("dir", DEFAULT_DIR)
        if not self.dir.startswith("/"):
            raise BadInput(f"--db-option dir: an absolute path, not {self.dir!r}")

    def setup(self, test: Test, node: str) -> None:
        test.remotes[node].exec(["mkdir", "-p", self.dir])

    def teardown(self, test: Test, node: str) -> None:
        test.remotes[node].exec(["rm", "-rf", self.dir])

    def log_files(self, test: Test, node: str) -> list[str]:
        return []

    def client(self, workload: str) -> Client:
        raise BadInput(f"DirDB serves no {workload!r}")
