"""A list-append client for PostgreSQL through pg8000 (a pure-Python driver from PyPI).

Data model: one table, `lists (k int primary key, v text)`, one row per key whose text column holds
the key's elements joined by commas, as Elle's own Jepsen PostgreSQL test stores them. An append is
`INSERT .. ON CONFLICT (k) DO UPDATE SET v = lists.v || ',' || excluded.v`: a write to the one row,
so two transactions appending to one key conflict on it exactly as two writers of one value do
(under repeatable read and serializable the second gets a serialization failure), and the order of
a list is the commit order of the row's versions. Rows of (key, element) instead would make every
append an insert that conflicts with nothing, and the order of a list would come from whatever
numbers the elements (a sequence, a timestamp), not from PostgreSQL's commit order.

Each transaction runs as `BEGIN ISOLATION LEVEL <level>`, its micro-ops in order, then `COMMIT`.
Outcomes follow what PostgreSQL guarantees: nothing commits before COMMIT is sent, so any error or
lost connection before that (including a serialization failure or deadlock on a statement, after
which the transaction is rolled back) is fail; an error reply to COMMIT itself (a serialization
failure at commit) is fail; a COMMIT sent without an answer is info.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pg8000.native
from pg8000.exceptions import DatabaseError

from jepsen_py.history import FAIL, INFO, OK, Op
from jepsen_py.protocols import Test

PORT = 5432
USER = "postgres"
DATABASE = "postgres"
TABLE = "lists"
CREATE_TABLE = f"CREATE TABLE IF NOT EXISTS {TABLE} (k integer PRIMARY KEY, v text NOT NULL)"
APPEND = (f"INSERT INTO {TABLE} AS t (k, v) VALUES (:k, :v) "
          "ON CONFLICT (k) DO UPDATE SET v = t.v || ',' || excluded.v")
READ = f"SELECT v FROM {TABLE} WHERE k = :k"
#: SQLSTATEs after which PostgreSQL has rolled the transaction back: it certainly did not happen.
ROLLED_BACK = {"40001": "serialization failure", "40P01": "deadlock detected"}
LEVELS = {"read-committed": "READ COMMITTED", "repeatable-read": "REPEATABLE READ",
          "serializable": "SERIALIZABLE"}


def connect(test: Test, node: str, timeout: float) -> pg8000.native.Connection:
    """A connection to `node`'s server through the port the backend publishes for it."""
    assert test.backend is not None
    host, port = test.backend.client_endpoint(node, PORT)
    return pg8000.native.Connection(USER, host=host, port=port, database=DATABASE, timeout=timeout,
                                    application_name="jepsen-py")


def close_quietly(conn: pg8000.native.Connection | None) -> None:
    """Closes a connection that may already be broken (close() writes a Terminate message)."""
    if conn is None:
        return
    try:
        conn.close()
    except Exception:
        sock = getattr(conn, "_usock", None)
        if sock is not None:
            sock.close()


def sqlstate(e: DatabaseError) -> str:
    """The SQLSTATE of an error reply (pg8000 passes the reply's fields as a dict)."""
    fields = e.args[0] if e.args and isinstance(e.args[0], dict) else {}
    return str(fields.get("C", ""))


def describe(e: BaseException) -> str:
    if isinstance(e, DatabaseError) and e.args and isinstance(e.args[0], dict):
        f = e.args[0]
        return f"{f.get('C', '?')} {f.get('M', '')}"[:200]
    return f"{type(e).__name__}: {e}"[:200]


def parse_list(v: str | None) -> list[int]:
    return [] if v is None or v == "" else [int(x) for x in v.split(",")]


class PostgresTxnClient:
    """The list-append workload's contract: f "txn", a value of ["append", k, v] / ["r", k, None]
    micro-ops, completed with the reads filled in."""

    def __init__(self, *, primary: str, isolation: str, timeout: float) -> None:
        self.primary = primary
        self.isolation = isolation
        self.timeout = timeout
        self.conn: pg8000.native.Connection | None = None

    def open(self, test: Test, node: str) -> PostgresTxnClient:
        # Every client talks to the one server, whatever node it is bound to; connected lazily in
        # invoke, so a server that is down makes ops fail instead of the client not opening.
        return PostgresTxnClient(primary=self.primary, isolation=self.isolation, timeout=self.timeout)

    def close(self, test: Test) -> None:
        close_quietly(self.conn)
        self.conn = None

    def invoke(self, test: Test, op: Op) -> Op:
        done: dict[str, Any] = {"node": self.primary}
        if op.f != "txn" or not isinstance(op.value, list):
            return dataclasses.replace(op, type=FAIL, error=f"unknown op {op.f!r}", **done)
        committing = False
        try:
            if self.conn is None:
                self.conn = connect(test, self.primary, self.timeout)
            conn = self.conn
            conn.run(f"BEGIN ISOLATION LEVEL {LEVELS[self.isolation]}")
            out = []
            for f, k, v in op.value:
                if f == "append":
                    conn.run(APPEND, k=int(k), v=str(int(v)))
                    out.append([f, k, v])
                elif f == "r":
                    rows = conn.run(READ, k=int(k))
                    out.append([f, k, parse_list(rows[0][0] if rows else None)])
                else:
                    conn.run("ROLLBACK")
                    return dataclasses.replace(op, type=FAIL, error=f"unknown micro-op {f!r}", **done)
            committing = True
            conn.run("COMMIT")
            return dataclasses.replace(op, type=OK, value=out, **done)
        except DatabaseError as e:
            # An error reply, before or at COMMIT: PostgreSQL rolled the transaction back (an error
            # in a transaction block aborts it; a failed COMMIT commits nothing), unless the server
            # is shutting the session down, when a COMMIT's fate is unknown.
            code = sqlstate(e)
            lost = committing and code not in ROLLED_BACK and code.startswith(("57", "08", "XX"))
            if lost:
                self.close(test)
            else:
                self._rollback()
            error = ROLLED_BACK.get(code, describe(e))
            return dataclasses.replace(op, type=INFO if lost else FAIL, error=error, **done)
        except Exception as e:  # the connection failed or timed out: nothing more can be read on it
            self.close(test)
            return dataclasses.replace(op, type=INFO if committing else FAIL, error=describe(e), **done)

    def _rollback(self) -> None:
        """Leaves the connection idle for the next transaction (a no-op outside one)."""
        if self.conn is None:
            return
        try:
            self.conn.run("ROLLBACK")
        except Exception:
            close_quietly(self.conn)
            self.conn = None
