"""One SparkSession, quiet: Spark's own logs stay at ERROR unless asked, and a progress line on stderr
says what the job is doing instead.

Spark prints its startup chatter (log4j's "Setting default log level", native-hadoop warnings) before
any Python code can lower the level, so the log4j2 configuration is handed to the JVM as a file at
launch. `JEPSEN_PY_SPARK_LOG=INFO` (or `get_session(log_level=...)`) turns the detail back on.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from jepsen_py.errors import EnvironmentProblem

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

LOG_ENV = "JEPSEN_PY_SPARK_LOG"
# The optional part of the install that brings PySpark (pyproject.toml's extras).
SPARK_EXTRA = "jepsen-py[spark]"
# ... and the one that adds the Spark Connect client (grpcio, pandas) for sc:// masters
CONNECT_EXTRA = "jepsen-py[spark-connect]"
DEFAULT_MASTER = "local[*]"

_LOG4J2 = """\
status = error
# Spark prints a "Setting default log level" banner unless the logger of the class that launched it
# (the Python gateway) has a level of its own equal to the root's
rootLogger.level = {level}
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = spark %p %c{{1}}: %m%n
logger.apache.name = org.apache
logger.apache.level = {level}
logger.sparkproject.name = org.sparkproject
logger.sparkproject.level = {level}
logger.netty.name = io.netty
logger.netty.level = {level}
logger.py4j.name = py4j
logger.py4j.level = {level}
logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer
logger.gateway.level = {level}
logger.repl.name = org.apache.spark.repl.Main
logger.repl.level = {level}
"""


class Progress:
    """A one-line progress report on stderr: `spark: <what> (<seconds since start>)`."""

    def __init__(self, enabled: bool = True, stream: TextIO | None = None) -> None:
        self.enabled = enabled
        self.stream = stream if stream is not None else sys.stderr
        self.start = time.monotonic()

    def __call__(self, what: str) -> None:
        if self.enabled:
            print(f"spark: {what} ({time.monotonic() - self.start:.1f} s)", file=self.stream, flush=True)


def _log4j_file(level: str) -> Path:
    d = Path(tempfile.gettempdir()) / f"jepsen-py-spark-{os.getuid()}"
    d.mkdir(exist_ok=True)
    path = d / f"log4j2-{level.lower()}.properties"
    text = _LOG4J2.format(level=level.lower())
    if not path.exists() or path.read_text() != text:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text)
        os.replace(tmp, path)
    return path


def is_connect(master: str | None) -> bool:
    """A Spark Connect URL (sc://host:port): the session is a gRPC client of a remote server."""
    return bool(master) and str(master).startswith("sc://")


def is_connect_session(spark: SparkSession) -> bool:
    return type(spark).__module__.startswith("pyspark.sql.connect")


def _connect_session(url: str, app_name: str, shuffle_partitions: int | None) -> SparkSession:
    """A Spark Connect client session. Its Python dependencies (grpcio, pandas, ...) come with the
    spark extra; a server that does not answer is the user's to start (254)."""
    try:
        from pyspark.sql import SparkSession
        from pyspark.sql.connect.utils import check_dependencies

        check_dependencies()
    except ImportError as e:
        raise EnvironmentProblem(f"{app_name} on {url} needs the Spark Connect client ({e}): "
                                 f"pip install '{CONNECT_EXTRA}'") from None
    _reachable(url)
    try:
        # the generic builder (not the Connect class's own) also switches pyspark.sql.functions and
        # friends to Connect columns for this process
        spark = SparkSession.builder.remote(url).getOrCreate()
        spark.conf.set("spark.sql.session.timeZone", "UTC")
        partitions = shuffle_partitions or max(4, 2 * (os.cpu_count() or 2))
        spark.conf.set("spark.sql.shuffle.partitions", str(partitions))
    except Exception as e:  # gRPC: no server there, or it refused us
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise EnvironmentProblem(f"cannot reach Spark Connect at {url}: {msg[:300]}") from None
    return spark


def _reachable(url: str) -> None:
    """The Connect client retries an absent server for minutes: ask the port once, quickly, first."""
    import socket
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url.split(";", 1)[0])
        host, port = parts.hostname or "localhost", parts.port or 15002
    except ValueError:
        raise EnvironmentProblem(f"--master {url}: not a Spark Connect URL (sc://host:port)") from None
    try:
        socket.create_connection((host, port), timeout=10).close()
    except OSError as e:
        raise EnvironmentProblem(f"cannot reach Spark Connect at {url}: {e.strerror or e}") from None


def get_session(
    master: str | None = None,
    *,
    app_name: str = "jepsen-py",
    log_level: str | None = None,
    shuffle_partitions: int | None = None,
    driver_memory: str | None = None,
) -> SparkSession:
    """A SparkSession on `master` (default local[*]); reuses a live one, as getOrCreate does.
    `sc://host:port` is a Spark Connect server: a thin client, no JVM here.

    Raises EnvironmentProblem (exit 254) when Java or PySpark is missing: the user can fix that.
    """
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise EnvironmentProblem(f"{app_name} needs PySpark, which is not installed: "
                                 f"pip install '{SPARK_EXTRA}'") from None
    if is_connect(master):
        return _connect_session(str(master), app_name, shuffle_partitions)
    level = (log_level or os.environ.get(LOG_ENV) or "ERROR").upper()
    log4j = _log4j_file(level)
    java_opts = f"-Dlog4j2.configurationFile=file:{log4j} -Dlog4j.configurationFile=file:{log4j}"
    # executors (local or remote) must run the same Python as the driver
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    # under spark-submit the launcher already chose the master: keep it unless one is asked for
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ
    cores = os.cpu_count() or 2
    builder = SparkSession.builder
    if master or not submitted:
        master = master or DEFAULT_MASTER
        builder = builder.master(master)
    builder = (
        builder.appName(app_name)
        .config("spark.driver.extraJavaOptions", java_opts)
        .config("spark.executor.extraJavaOptions", java_opts)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions or max(4, 2 * cores)))
        .config("spark.sql.adaptive.enabled", "true")
        .config("spark.driver.memory", driver_memory or os.environ.get("JEPSEN_PY_SPARK_MEMORY", "2g"))
        .config("spark.python.worker.reuse", "true")
        # list many small run directories on the driver instead of launching a listing job
        .config("spark.sql.sources.parallelPartitionDiscovery.threshold", "100000")
    )
    try:
        spark = builder.getOrCreate()
    except Exception as e:  # the JVM did not start: Java missing or broken
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        where = master or "the submitted master"
        raise EnvironmentProblem(f"cannot start Spark on {where}: {msg} (is Java 17+ installed?)") from None
    spark.sparkContext.setLogLevel(level)
    return spark
