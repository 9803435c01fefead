"""The PostgreSQL image: the jepsen-py node image plus Debian's `postgresql` (PostgreSQL 15 on
Debian 12), built by jepsen-py's `derived_image` (docker build FROM the local node image, apt-get
from Debian's mirror, no registry), once, then looked up by the hash of its recipe."""

from __future__ import annotations

from jepsen_py.backends.image import derived_image

REPOSITORY = "jepsen-py/postgres"
PACKAGES = ("postgresql",)


def ensure_image(route: str | None = None) -> str:
    """The PostgreSQL image's tag, building the node image and then this one only when missing."""
    return derived_image(REPOSITORY, PACKAGES, route)


if __name__ == "__main__":
    print(ensure_image())
