"""`jepsen-py image`: build (or find) the node image ahead of a run, and say which tag it has.

A run builds the image on first use anyway; this lets a machine be prepared once (for example in a
CI step before the tests) and shows whether the cache is warm.
"""

from __future__ import annotations

import argparse
import time

from jepsen_py.backends.docker import docker_client
from jepsen_py.backends.image import ROUTES, ImageRecipe, default_route, ensure_image, image_exists

NAME = "image"
HELP = "build the Docker node image (cached by the hash of its inputs) and print its tag"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--image-base", choices=ROUTES, default=default_route(),
                        help="debootstrap (Debian packages + docker import; no registry needed) or "
                             "debian (FROM debian:bookworm-slim; needs a pull). Default from "
                             "JEPSEN_PY_IMAGE_BASE, else debootstrap")
    parser.add_argument("--rebuild", action="store_true",
                        help="build again even if an image with the same inputs exists")


def run(args: argparse.Namespace) -> int:
    recipe = ImageRecipe(args.image_base)

    client = docker_client()
    cached = image_exists(client, recipe.tag) and not args.rebuild
    t = time.perf_counter()
    tag = ensure_image(args.image_base, client=client, rebuild=args.rebuild)
    took = time.perf_counter() - t
    print(f"{tag} ({'cached' if cached else f'built in {took:.1f} s'}, route {args.image_base})")
    return 0
