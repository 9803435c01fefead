"""The node image: Debian with python3, iptables, libfaketime, procps and openssh-server.

Two routes, chosen explicitly (never by trying one and falling back, since a pull on an air-gapped
machine is exactly what must not happen):

- ``debootstrap``: a root filesystem made by debootstrap from Debian's packages and turned into an
  image with ``docker import``. Needs only the Debian package mirror, so it works on air-gapped
  machines and in CI. The default here (``JEPSEN_PY_IMAGE_BASE`` overrides it).
- ``debian``: ``FROM debian:bookworm-slim`` plus apt-get, for users whose Docker can pull.

The image is tagged ``jepsen-py/node:<hash of its inputs>``; the debootstrap tarball is cached under
``$XDG_CACHE_HOME/jepsen-py`` (or ``~/.cache/jepsen-py``). Both are rebuilt only when an input changes,
so the second build is a lookup.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import io
import json
import logging
import os
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jepsen_py.errors import BadInput, EnvironmentProblem

log = logging.getLogger(__name__)

LABEL = "jepsen-py"
REPOSITORY = "jepsen-py/node"
ROUTES = ("debootstrap", "debian")
SUITE = "bookworm"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
# Bump when the recipe changes in a way the lists below do not show.
RECIPE_VERSION = 2
PACKAGES: tuple[str, ...] = (
    "python3",
    "iptables",
    "libfaketime",
    "procps",
    "openssh-server",
    "iproute2",
    "sudo",
)
# The image's own settings: a UTF-8 locale and an idle command (the backend runs its own anyway).
IMAGE_CHANGES: tuple[str, ...] = (
    "ENV LANG=C.UTF-8",
    "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    'CMD ["sleep", "infinity"]',
)
LIBFAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"


def default_route() -> str:
    """The route used when none is given: JEPSEN_PY_IMAGE_BASE, else debootstrap (air-gapped safe)."""
    return os.environ.get("JEPSEN_PY_IMAGE_BASE", "debootstrap")


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "jepsen-py"


@dataclass(frozen=True, slots=True)
class ImageRecipe:
    """Everything that determines the image's content; its hash is the image tag."""

    route: str
    suite: str = SUITE
    packages: tuple[str, ...] = PACKAGES
    changes: tuple[str, ...] = IMAGE_CHANGES
    version: int = RECIPE_VERSION

    def __post_init__(self) -> None:
        if self.route not in ROUTES:
            raise BadInput(f"--image-base: unknown route {self.route!r} (choose from {', '.join(ROUTES)})")

    def digest(self) -> str:
        payload = json.dumps(
            {"route": self.route, "suite": self.suite, "packages": sorted(self.packages),
             "changes": list(self.changes), "version": self.version},
            sort_keys=True,
        )
        return hashlib.sha256(payload.encode()).hexdigest()[:16]

    def rootfs_digest(self) -> str:
        """The debootstrap tarball depends on suite and packages only."""
        payload = json.dumps({"suite": self.suite, "packages": sorted(self.packages),
                              "version": self.version}, sort_keys=True)
        return hashlib.sha256(payload.encode()).hexdigest()[:16]

    @property
    def tag(self) -> str:
        return f"{REPOSITORY}:{self.digest()}"

    def dockerfile(self) -> str:
        """The `debian` route's Dockerfile."""
        lines = [
            f"FROM debian:{self.suite}-slim",
            "RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y "
            "--no-install-recommends " + " ".join(sorted(self.packages))
            + " && rm -rf /var/lib/apt/lists/*",
            f'LABEL "{LABEL}"="node-image"',
        ]
        lines += list(self.changes)
        return "\n".join(lines) + "\n"


@contextlib.contextmanager
def _build_lock(path: Path) -> Iterator[None]:
    """Serialises builds across processes (parallel tests, two terminals) so each input builds once."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def docker_client() -> Any:
    """A connected docker SDK client, or one clear EnvironmentProblem line when no engine answers."""
    try:
        import docker
        import docker.errors
    except ImportError as e:  # pragma: no cover - a dependency of the package
        raise EnvironmentProblem("the docker Python SDK is not installed (pip install docker)") from e
    try:
        client = docker.from_env(timeout=120)
        client.ping()
    except docker.errors.DockerException as e:
        raise EnvironmentProblem(
            f"no Docker engine reachable ({_short(e)}): start the Docker engine (dockerd, or "
            "systemctl start docker) or choose another --backend"
        ) from e
    except Exception as e:  # requests' connection errors surface under several types
        raise EnvironmentProblem(f"no Docker engine reachable ({_short(e)}): start the Docker engine "
                                 "(dockerd, or systemctl start docker) or choose another --backend") from e
    return client


def _short(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[-1][:200] if text else type(e).__name__


def _docker() -> object:
    return docker_client()


def image_exists(client: object, tag: str) -> bool:
    import docker.errors

    try:
        client.images.get(tag)  # type: ignore[attr-defined]
        return True
    except docker.errors.ImageNotFound:
        return False


def rootfs_tarball(recipe: ImageRecipe, *, mirror: str | None = None) -> Path:
    """The cached debootstrap root filesystem as a tar, made on first use."""
    out = cache_dir() / f"rootfs-{recipe.suite}-{recipe.rootfs_digest()}.tar"
    with _build_lock(out.with_suffix(".lock")):
        if out.exists():
            return out
        if shutil.which("debootstrap") is None:
            raise EnvironmentProblem(
                "debootstrap not found: install it (apt-get install debootstrap) or use --image-base debian"
            )
        if os.geteuid() != 0:
            raise EnvironmentProblem("the debootstrap image route needs root (debootstrap chroots)")
        mirror = mirror or os.environ.get("JEPSEN_PY_DEBIAN_MIRROR", DEFAULT_MIRROR)
        with tempfile.TemporaryDirectory(prefix="jepsen-py-rootfs-", dir=out.parent) as tmp:
            root = Path(tmp) / "root"
            argv = ["debootstrap", "--variant=minbase", "--include=" + ",".join(recipe.packages),
                    recipe.suite, str(root), mirror]
            log.info("building node rootfs: %s", " ".join(argv))
            proc = subprocess.run(argv, capture_output=True, text=True)
            if proc.returncode != 0:
                tail = (proc.stdout + proc.stderr).strip().splitlines()[-5:]
                raise EnvironmentProblem(f"debootstrap failed (exit {proc.returncode}): {' | '.join(tail)}")
            _slim_rootfs(root)
            partial = out.with_suffix(".tar.partial")
            # tar(1) keeps device nodes, xattrs and hard links exactly as debootstrap made them.
            subprocess.run(["tar", "--numeric-owner", "-C", str(root), "-cf", str(partial), "."],
                           check=True, capture_output=True)
            partial.rename(out)
        return out


def _slim_rootfs(root: Path) -> None:
    """Drops what a node never needs (package caches, docs) so import and container start stay fast."""
    for rel in ("var/cache/apt/archives", "var/lib/apt/lists", "usr/share/doc", "usr/share/man",
                "usr/share/locale"):
        d = root / rel
        if d.is_dir():
            for child in d.iterdir():
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child, ignore_errors=True)
                else:
                    with contextlib.suppress(OSError):
                        child.unlink()


def ensure_image(route: str | None = None, *, client: object | None = None, rebuild: bool = False) -> str:
    """Returns the tag of the node image for `route`, building it only if its inputs changed."""
    recipe = ImageRecipe(route or default_route())
    client = client or _docker()
    tag = recipe.tag
    if not rebuild and image_exists(client, tag):
        return tag
    with _build_lock(cache_dir() / f"image-{recipe.digest()}.lock"):
        if not rebuild and image_exists(client, tag):
            return tag
        if recipe.route == "debootstrap":
            _import_rootfs(client, recipe, rootfs_tarball(recipe))
        else:
            _build_from_debian(client, recipe)
    return tag


def _import_rootfs(client: object, recipe: ImageRecipe, tarball: Path) -> None:
    import docker.errors

    changes = [*recipe.changes, f'LABEL "{LABEL}"="node-image"']
    repo, tag = recipe.tag.split(":")
    log.info("docker import %s as %s", tarball, recipe.tag)
    try:
        client.api.import_image_from_file(str(tarball), repository=repo, tag=tag,  # type: ignore[attr-defined]
                                          changes=changes)
    except docker.errors.APIError as e:
        raise EnvironmentProblem(f"docker import of {tarball} failed: {e.explanation or e}") from e
    if not image_exists(client, recipe.tag):
        raise EnvironmentProblem(f"docker import of {tarball} did not produce {recipe.tag}")


def _build_from_debian(client: object, recipe: ImageRecipe) -> None:
    """The `debian` route. It pulls debian:<suite>-slim, so it is only ever taken when asked for."""
    import docker.errors

    buf = io.BytesIO()
    data = recipe.dockerfile().encode()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    buf.seek(0)
    try:
        client.images.build(fileobj=buf, custom_context=True, tag=recipe.tag,  # type: ignore[attr-defined]
                            labels={LABEL: "node-image"}, rm=True)
    except (docker.errors.BuildError, docker.errors.APIError) as e:
        raise EnvironmentProblem(
            f"building the node image from debian:{recipe.suite}-slim failed ({e}); "
            "on a machine without registry access use --image-base debootstrap"
        ) from e


def derived_dockerfile(base: str, packages: tuple[str, ...] | list[str], label: str) -> str:
    """The Dockerfile of an image FROM `base` with Debian `packages` added by apt-get."""
    return (
        f"FROM {base}\n"
        "RUN apt-get update \\\n"
        " && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "
        f"{' '.join(packages)} \\\n"
        " && rm -rf /var/lib/apt/lists/*\n"
        f'LABEL "{LABEL}"="{label}"\n'
    )


def derived_image(repository: str, packages: tuple[str, ...] | list[str], route: str | None = None, *,
                  client: object | None = None) -> str:
    """The tag of the node image plus Debian `packages` (a system under test, as a plugin's DB
    needs it), built with `docker build` only when missing. It needs no registry: the base is the
    local node image and apt-get reaches only Debian's mirror. The tag is a hash of the recipe, so a
    changed package list builds anew and an unchanged one is looked up."""
    import docker.errors

    client = client or _docker()
    base = ensure_image(route, client=client)
    name = repository.rsplit("/", 1)[-1]
    text = derived_dockerfile(base, packages, f"{name}-image")
    tag = f"{repository}:{hashlib.sha256(text.encode()).hexdigest()[:16]}"
    if image_exists(client, tag):
        return tag
    with _build_lock(cache_dir() / f"derived-{tag.replace('/', '_').replace(':', '_')}.lock"):
        if image_exists(client, tag):
            return tag
        log.info("building %s from %s (apt-get install %s)", tag, base, " ".join(packages))
        try:
            client.images.build(fileobj=io.BytesIO(text.encode()), tag=tag, rm=True,  # type: ignore[attr-defined]
                                forcerm=True)
        except (docker.errors.BuildError, docker.errors.APIError) as e:
            raise EnvironmentProblem(
                f"building {tag} (apt-get install {' '.join(packages)}) failed: {e}") from e
    return tag
