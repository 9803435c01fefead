"""Reading a history file as text, with the one-line errors every importer gives."""

from __future__ import annotations

from pathlib import Path

from jepsen_py.errors import BadInput


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BadInput(f"{path}: no such file") from None
    except IsADirectoryError:
        raise BadInput(f"{path}: is a directory") from None
    except UnicodeDecodeError as e:
        line = e.object[: e.start].count(b"\n") + 1
        raise BadInput(f"{path}:{line}: not UTF-8 text ({e.reason})") from None
    except OSError as e:
        raise BadInput(f"{path}: cannot read ({e.strerror or e})") from None
