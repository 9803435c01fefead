"""Fixtures for nemesis tests: three real containers running the probe server (support.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from jepsen_py.protocols import Test
from tests.nemeses.support import ProbeDB, make_spec, make_test


@pytest.fixture(scope="module")
def probe_cluster(node_image: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Test]:
    """Three containers with the probe server running on each; torn down after the module."""
    from jepsen_py.backends.docker import DockerBackend

    tmp = tmp_path_factory.mktemp("probe")
    spec = make_spec(["n1", "n2", "n3"], tmp, options={"docker_image": node_image})
    test = make_test(spec, tmp)
    test.db = ProbeDB(spec)  # type: ignore[assignment]
    test.backend = DockerBackend(spec)
    try:
        test.remotes = test.backend.setup(test)
        for n in spec.nodes:
            test.db.setup(test, n)
        yield test
    finally:
        test.backend.teardown(test)
