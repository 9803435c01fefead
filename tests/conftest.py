"""Shared test fixtures. Tests that need Docker, Spark or a browser never skip in CI (CI=true):
there a missing engine is a failure, not a skip."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def require(what: str, available: bool) -> None:
    """Skips the test outside CI when `what` is missing; fails it in CI."""
    if available:
        return
    if IN_CI:
        pytest.fail(f"{what} is required in CI but is not available")
    pytest.skip(f"{what} not available (outside CI)")


def docker_available() -> bool:
    if shutil.which("docker") is None:
        return False
    try:
        return subprocess.run(["docker", "info"], capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@pytest.fixture(scope="session")
def docker_engine() -> None:
    """Use in any test that needs a Docker engine."""
    require("a Docker engine", docker_available())


@pytest.fixture(scope="session")
def node_image(docker_engine: None) -> str:
    """The jepsen-py node image (built once by the route JEPSEN_PY_IMAGE_BASE names, debootstrap by
    default; cached across sessions, so usually a lookup)."""
    from jepsen_py.backends.image import ensure_image

    return ensure_image()
