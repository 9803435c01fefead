"""The Redis image: the jepsen-py node image plus Debian's redis-server and redis-tools.

Built with `docker build` FROM the local node image, so no registry is needed (apt-get reaches only
Debian's mirror). The tag is a hash of the node image's tag and this recipe: built once, then
looked up.
"""

from __future__ import annotations

import hashlib
import io
import logging

from jepsen_py.errors import EnvironmentProblem

log = logging.getLogger(__name__)

REPOSITORY = "jepsen-py/redis"
PACKAGES = ("redis-server", "redis-tools")


def dockerfile(base: str) -> str:
    return (
        f"FROM {base}\n"
        "RUN apt-get update \\\n"
        " && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "
        f"{' '.join(PACKAGES)} \\\n"
        " && rm -rf /var/lib/apt/lists/*\n"
        'LABEL "jepsen-py"="redis-image"\n'
    )


def ensure_image(route: str | None = None) -> str:
    """The Redis image's tag, building the node image and then this one only when missing."""
    import docker
    import docker.errors

    from jepsen_py.backends.image import ensure_image as ensure_node_image
    from jepsen_py.backends.image import image_exists

    client = docker.from_env()
    base = ensure_node_image(route, client=client)
    text = dockerfile(base)
    tag = f"{REPOSITORY}:{hashlib.sha256(text.encode()).hexdigest()[:16]}"
    if image_exists(client, tag):
        return tag
    log.info("building %s from %s (apt-get install %s)", tag, base, " ".join(PACKAGES))
    try:
        client.images.build(fileobj=io.BytesIO(text.encode()), tag=tag, rm=True, forcerm=True)
    except (docker.errors.BuildError, docker.errors.APIError) as e:
        raise EnvironmentProblem(f"building the Redis image {tag} failed: {e}") from e
    return tag


if __name__ == "__main__":
    print(ensure_image())
