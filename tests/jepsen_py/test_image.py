"""The node image: tagged by the hash of its inputs, built once, with every tool the faults need."""

from __future__ import annotations

import time

import pytest

from jepsen_py.backends.image import (
    PACKAGES,
    ImageRecipe,
    default_route,
    ensure_image,
)
from jepsen_py.errors import BadInput


def test_tag_is_a_hash_of_the_inputs():
    a = ImageRecipe("debootstrap")
    assert a.tag == ImageRecipe("debootstrap").tag
    assert a.tag.startswith("jepsen-py/node:")
    assert ImageRecipe("debian").tag != a.tag
    assert ImageRecipe("debootstrap", packages=(*PACKAGES, "curl")).tag != a.tag
    assert ImageRecipe("debootstrap", packages=tuple(reversed(PACKAGES))).tag == a.tag
    assert ImageRecipe("debootstrap", version=99).tag != a.tag
    # The debootstrap tarball does not depend on the image's own settings.
    assert ImageRecipe("debootstrap", changes=()).rootfs_digest() == a.rootfs_digest()


def test_routes_are_explicit(monkeypatch):
    with pytest.raises(BadInput, match="--image-base"):
        ImageRecipe("ubuntu")
    monkeypatch.delenv("JEPSEN_PY_IMAGE_BASE", raising=False)
    assert default_route() == "debootstrap", "the air-gapped route is the default"
    monkeypatch.setenv("JEPSEN_PY_IMAGE_BASE", "debian")
    assert default_route() == "debian"


def test_debian_route_dockerfile_names_every_package():
    df = ImageRecipe("debian").dockerfile()
    assert df.startswith("FROM debian:bookworm-slim\n")
    assert all(p in df for p in PACKAGES)


@pytest.mark.docker
def test_image_is_cached_and_has_the_tools(node_image):
    from jepsen_py.backends.docker import docker_client

    t = time.perf_counter()
    assert ensure_image() == node_image
    # a build takes minutes; a lookup well under a second, or seconds from a busy Docker daemon
    assert time.perf_counter() - t < 30, "a cached image is a lookup, not a build"
    client = docker_client()
    img = client.images.get(node_image)
    assert img.labels.get("jepsen-py") == "node-image"
    out = client.containers.run(
        node_image,
        ["sh", "-c", "python3 --version && iptables --version && command -v sshd pkill start-stop-daemon"
                     " && ls /usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"],
        remove=True, init=True,
    ).decode()
    assert "Python 3" in out and "iptables" in out and "sshd" in out and "libfaketime.so.1" in out
