"""The etcd image: the jepsen-py node image plus Debian's etcd-server and etcd-client, built by
jepsen-py's `derived_image` (docker build FROM the local node image, apt-get from Debian's mirror, no
registry), once, then looked up by the hash of its recipe."""

from __future__ import annotations

from jepsen_py.backends.image import derived_image

REPOSITORY = "jepsen-py/etcd"
PACKAGES = ("etcd-server", "etcd-client")


def ensure_image(route: str | None = None) -> str:
    """The etcd image's tag, building the node image and then this one only when missing."""
    return derived_image(REPOSITORY, PACKAGES, route)


if __name__ == "__main__":
    print(ensure_image())
