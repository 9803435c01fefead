"""The Parquet schemas a run is exported to, so any tool (Spark, DuckDB, pandas) can read many runs.

Two tables per run, under <run dir>/parquet/:

ops.parquet: one row per history record.
    run_id        "<test-name>/<timestamp>": the run directory's last two path parts; unique per store
    workload      the workload name (test.json "workload")
    nemesis       the nemesis names joined with "," in the order given; "none" when empty
    bug           the --bug names joined with "," (sorted); "none" when the cluster ran correct
    read_mode     the read mode (read-index | lease | local | ...); "n/a" for a DB without read modes
    db_options    the --db-option settings as "key=value,..." sorted by key; "default" when none
    fault_targets the --fault-targets kinds joined with "," (sorted); "default" when none were given
    nemesis_schedule  how fault families took turns (random | cycle)
    version       version of the system under test: --db-version, else for our cluster the git
                  describe of the uploaded code (test.json options["db_version"]; "version" in older
                  runs), else "unversioned"
    index, time   the op's history index and nanoseconds since the test started
    type          invoke | ok | fail | info
    process       the process as text ("3", "nemesis", "observer")
    is_client     true when the process is a client number (the op counts towards availability)
    f             the op's function
    key, value, error, meta
                  the op's fields as JSON text (null when the field is null / meta is empty), so a
                  reader gets back exactly what the history held
    node          the node that served the op (completions) or the observer sample's node
    role, term    meta["role"] / meta["term"] lifted out for queries (null when absent)
    invoke_index  on a completion: the index of its invocation (null on invocations and samples)
    latency_ns    on a completion: its time minus its invocation's time

run.parquet: one row per run.
    run_id, test_name, workload, nemesis, bug, read_mode, db_options, fault_targets, nemesis_schedule,
    version       as above
    bugs          the --bug names as a list
    db, backend   the DB implementation and backend the run used
    start_time    when the run started (UTC; from the run directory's timestamp)
    start_day     its calendar day, the unit of the trend charts
    time_limit, concurrency, rate, seed, node_count   from test.json
    valid         the merged verdict as text: "true" | "false" | "unknown"; "missing" without results.json
    checker_valid each checker's verdict as text
    anomalies     count of anomalies by kind, summed over every checker
    results_json  results.json verbatim (null when missing)
    ops, client_invokes, ok, fail, info
                  record counts; info counts client ops that never completed too
    schema_version  SCHEMA_VERSION at export time
"""

from __future__ import annotations

import pyarrow as pa

SCHEMA_VERSION = 3

# Every run parameter that changes the verdict a run should get: the dimensions the aggregate groups
# by. A deliberately weak read mode, a bug, where faults land and how they take turns each make runs
# that must not be counted with the others (a weak --read-mode local run is not the correct build
# failing), and so does the system's version, and so does a DB's own setting (--db-option: a plugin's
# reads from replicas are not its reads from the primary).
GROUP_COLUMNS: tuple[str, ...] = (
    "workload", "nemesis", "bug", "read_mode", "db_options", "fault_targets", "nemesis_schedule",
    "version",
)

NO_BUG = "none"
NO_NEMESIS = "none"
DEFAULT_TARGETS = "default"
DEFAULT_SCHEDULE = "random"
DEFAULT_DB_OPTIONS = "default"
NO_READ_MODE = "n/a"
UNVERSIONED = "unversioned"

OPS_SCHEMA = pa.schema(
    [
        pa.field("run_id", pa.string(), nullable=False),
        pa.field("workload", pa.string(), nullable=False),
        pa.field("nemesis", pa.string(), nullable=False),
        pa.field("bug", pa.string(), nullable=False),
        pa.field("read_mode", pa.string(), nullable=False),
        pa.field("db_options", pa.string(), nullable=False),
        pa.field("fault_targets", pa.string(), nullable=False),
        pa.field("nemesis_schedule", pa.string(), nullable=False),
        pa.field("version", pa.string(), nullable=False),
        pa.field("index", pa.int64(), nullable=False),
        pa.field("time", pa.int64(), nullable=False),
        pa.field("type", pa.string(), nullable=False),
        pa.field("process", pa.string(), nullable=False),
        pa.field("is_client", pa.bool_(), nullable=False),
        pa.field("f", pa.string(), nullable=False),
        pa.field("key", pa.string()),
        pa.field("value", pa.string()),
        pa.field("node", pa.string()),
        pa.field("error", pa.string()),
        pa.field("meta", pa.string()),
        pa.field("role", pa.string()),
        pa.field("term", pa.int64()),
        pa.field("invoke_index", pa.int64()),
        pa.field("latency_ns", pa.int64()),
    ]
)

RUN_SCHEMA = pa.schema(
    [
        pa.field("run_id", pa.string(), nullable=False),
        pa.field("test_name", pa.string(), nullable=False),
        pa.field("workload", pa.string(), nullable=False),
        pa.field("nemesis", pa.string(), nullable=False),
        pa.field("bug", pa.string(), nullable=False),
        pa.field("bugs", pa.list_(pa.string()), nullable=False),
        pa.field("read_mode", pa.string(), nullable=False),
        pa.field("db_options", pa.string(), nullable=False),
        pa.field("fault_targets", pa.string(), nullable=False),
        pa.field("nemesis_schedule", pa.string(), nullable=False),
        pa.field("version", pa.string(), nullable=False),
        pa.field("db", pa.string()),
        pa.field("backend", pa.string()),
        pa.field("start_time", pa.timestamp("ms", tz="UTC"), nullable=False),
        pa.field("start_day", pa.date32(), nullable=False),
        pa.field("time_limit", pa.float64()),
        pa.field("concurrency", pa.int64()),
        pa.field("rate", pa.float64()),
        pa.field("seed", pa.int64()),
        pa.field("node_count", pa.int64()),
        pa.field("valid", pa.string(), nullable=False),
        pa.field("checker_valid", pa.map_(pa.string(), pa.string())),
        pa.field("anomalies", pa.map_(pa.string(), pa.int64())),
        pa.field("results_json", pa.string()),
        pa.field("ops", pa.int64(), nullable=False),
        pa.field("client_invokes", pa.int64(), nullable=False),
        pa.field("ok", pa.int64(), nullable=False),
        pa.field("fail", pa.int64(), nullable=False),
        pa.field("info", pa.int64(), nullable=False),
        pa.field("schema_version", pa.int64(), nullable=False),
    ]
)

OPS_FILE = "ops.parquet"
RUN_FILE = "run.parquet"
PARQUET_DIR = "parquet"


def verdict_text(v: object) -> str:
    """A checker verdict (True / False / "unknown") as the text stored in Parquet."""
    if v is True:
        return "true"
    if v is False:
        return "false"
    if v == "unknown":
        return "unknown"
    return "unknown" if v is None else str(v).lower()


def group_label(r: dict[str, object]) -> str:
    """A group's name for charts: workload / nemesis / bug / read mode, then what is not the default."""
    parts = [str(r.get(k)) for k in ("workload", "nemesis", "bug", "read_mode")]
    if r.get("db_options") not in (None, DEFAULT_DB_OPTIONS):
        parts.append(str(r["db_options"]))
    if r.get("fault_targets") not in (None, DEFAULT_TARGETS):
        parts.append(f"targets {r['fault_targets']}")
    if r.get("nemesis_schedule") not in (None, DEFAULT_SCHEDULE):
        parts.append(f"{r['nemesis_schedule']} schedule")
    if r.get("version"):
        parts.append(str(r["version"]))
    return " / ".join(parts)
