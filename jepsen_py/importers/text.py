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
        raise BadInput(f"{path}: not UTF-8 text ({e.reason})") from None
