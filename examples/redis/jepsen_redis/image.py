"""The Redis image: the jepsen-py node image plus Debian's redis-server and redis-tools, built by
jepsen-py's `derived_image` (docker build FROM the local node image, apt-get from Debian's mirror, no
registry), once, then looked up by the hash of its recipe."""

from __future__ import annotations

from jepsen_py.backends.image import derived_image

REPOSITORY = "jepsen-py/redis"
PACKAGES = ("redis-server", "redis-tools")


def ensure_image(route: str | None = None) -> str:
    """The Redis image's tag, building the node image and then this one only when missing."""
    return derived_image(REPOSITORY, PACKAGES, route)


if __name__ == "__main__":
    print(ensure_image())
