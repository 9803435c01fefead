"""One real SparkSession (local[2]) for every Spark test: starting one costs ~15 s."""

from __future__ import annotations

import importlib.util
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import require


def spark_available() -> bool:
    return shutil.which("java") is not None and importlib.util.find_spec("pyspark") is not None


@pytest.fixture(scope="session")
def spark_session() -> Iterator[Any]:
    require("Java and PySpark", spark_available())
    from jepsen_py.spark.session import get_session

    session = get_session("local[2]", shuffle_partitions=4)
    yield session
    session.stop()
