"""The merge layer: every harness plans its edits on a ``Workspace``, an overlay of the
files it reads and writes, so that a whole run can be shown as one unified diff
(``--dry-run``), applied atomically file by file, and planned again with no change.

Which files and directories setup *created* is remembered in ``$CODENAV_HOME/setup.json``:
``--remove`` deletes a file only when setup created it and nothing else is left in it, and
a directory only when setup created it and it is empty. A file that existed keeps its bytes.
"""

from __future__ import annotations

import difflib
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from codenav.errors import ConfigError
from codenav_cli.setup import blocks, jsonc


class Workspace:
    def __init__(self, manifest: Path) -> None:
        self.manifest = manifest
        self.created: set[str] = set()
        if manifest.is_file():
            try:
                self.created = set(json.loads(manifest.read_text(encoding="utf-8"))["created"])
            except (ValueError, KeyError, TypeError):
                self.created = set()
        self._before: dict[Path, str | None] = {}
        self._after: dict[Path, str | None] = {}

    # --- the overlay ---------------------------------------------------------------------
    def read(self, path: Path) -> str | None:
        if path in self._after:
            return self._after[path]
        if path not in self._before:
            try:
                self._before[path] = path.read_text(encoding="utf-8")
            except FileNotFoundError:
                self._before[path] = None
            except (OSError, UnicodeDecodeError) as exc:
                raise ConfigError(f"cannot read {path}: {type(exc).__name__} {exc}") from None
        return self._before[path]

    def write(self, path: Path, text: str | None) -> None:
        self.read(path)
        self._after[path] = text

    def exists(self, path: Path) -> bool:
        return self.read(path) is not None

    def was_created(self, path: Path) -> bool:
        return str(path) in self.created

    def snapshot(self) -> dict[Path, str | None]:
        return dict(self._after)

    def rollback(self, snapshot: dict[Path, str | None]) -> None:
        self._after = dict(snapshot)

    def changed_since(self, snapshot: dict[Path, str | None]) -> list[Path]:
        return [p for p, text in self._after.items()
                if text != snapshot.get(p, self._before.get(p))]

    def changes(self) -> list[tuple[Path, str | None, str | None]]:
        return [(p, self._before.get(p), after) for p, after in self._after.items()
                if after != self._before.get(p)]

    # --- showing and applying ------------------------------------------------------------
    def diff(self, show: Callable[[Path], str]) -> str:
        out: list[str] = []
        for path, before, after in self.changes():
            name = show(path)
            old, new = (name, name) if name.startswith(("~", "/")) else (f"a/{name}", f"b/{name}")
            out.extend(difflib.unified_diff(
                (before or "").splitlines(keepends=True), (after or "").splitlines(keepends=True),
                fromfile="/dev/null" if before is None else old,
                tofile="/dev/null" if after is None else new))
            if out and not out[-1].endswith("\n"):
                out[-1] += "\n\\ No newline at end of file\n"
        return "".join(out)

    def apply(self) -> None:
        for path, before, after in self.changes():
            if after is None:
                path.unlink(missing_ok=True)
                self.created.discard(str(path))
                continue
            self._mkdirs(path.parent)
            _atomic_write(path, after)
            if before is None:
                self.created.add(str(path))
        for name in sorted(self.created, key=lambda p: -p.count(os.sep)):
            folder = Path(name)
            if folder.is_dir() and not any(folder.iterdir()):
                folder.rmdir()
                self.created.discard(name)
            elif not folder.exists():
                self.created.discard(name)
        self._save()
        self._before.update(self._after)
        self._after = {}

    def _mkdirs(self, folder: Path) -> None:
        missing = []
        while not folder.exists():
            missing.append(folder)
            folder = folder.parent
        for made in reversed(missing):
            made.mkdir()
            self.created.add(str(made))

    def _save(self) -> None:
        if not self.created:
            self.manifest.unlink(missing_ok=True)
            return
        self.manifest.parent.mkdir(parents=True, exist_ok=True)
        _atomic_write(self.manifest, json.dumps({"created": sorted(self.created)}, indent=2)
                      + "\n")


def _atomic_write(path: Path, text: str) -> None:
    mode = path.stat().st_mode & 0o7777 if path.exists() else None
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# --- the three kinds of edit -------------------------------------------------------------

def _bad(path: Path, exc: ConfigError) -> ConfigError:
    return ConfigError(f"cannot merge into {path}: {exc.message}",
                       hint="fix the file (or add the entry by hand); it was left unchanged")


def _empty_document(text: str) -> bool:
    root = jsonc.parse(text)
    return root.kind == "object" and not root.items and not jsonc.has_comments(text)


def json_member(ws: Workspace, path: Path, keypath: list[str], value: Any,
                remove: bool) -> None:
    """Set (or remove) one member of a JSON/JSONC file, creating the file if needed."""
    text = ws.read(path)
    try:
        if remove:
            if text is None or not text.strip():
                return
            new: str | None = jsonc.delete(text, keypath)
            if new != text and new is not None and _empty_document(new) and ws.was_created(path):
                new = None
        else:
            new = jsonc.upsert(text if text and text.strip() else "{}\n", keypath, value)
    except ConfigError as exc:
        raise _bad(path, exc) from None
    ws.write(path, new)


def json_element(ws: Workspace, path: Path, keypath: list[str], ident: str,
                 value: dict[str, Any], remove: bool) -> None:
    """Set (or remove) the element of a JSON array whose ``ident`` is ``value[ident]``."""
    text = ws.read(path)
    try:
        if remove:
            if text is None or not text.strip():
                return
            new: str | None = jsonc.delete_element(text, keypath, ident, value[ident])
            if new != text and new is not None and _empty_document(new) and ws.was_created(path):
                new = None
        else:
            new = jsonc.upsert_element(text if text and text.strip() else "{}\n", keypath,
                                       ident, value)
    except ConfigError as exc:
        raise _bad(path, exc) from None
    ws.write(path, new)


def json_has(ws: Workspace, path: Path, keypath: list[str]) -> bool:
    text = ws.read(path)
    if not text or not text.strip():
        return False
    try:
        value: Any = jsonc.loads(text)
    except ConfigError:
        return False
    for key in keypath:
        if not isinstance(value, dict) or key not in value:
            return False
        value = value[key]
    return True


def text_block(ws: Workspace, path: Path, body: str, style: blocks.Style,
               remove: bool) -> None:
    """Set (or remove) codenav's marked block in a text file."""
    text = ws.read(path)
    if remove:
        if text is None:
            return
        new: str | None = blocks.strip(text, style)
        if new != text and new == "" and ws.was_created(path):
            new = None
        ws.write(path, new)
    else:
        ws.write(path, blocks.upsert(text, body, style))


def has_block(ws: Workspace, path: Path, style: blocks.Style) -> bool:
    text = ws.read(path)
    return text is not None and style.span(text) is not None


def owned_file(ws: Workspace, path: Path, content: str, remove: bool) -> None:
    """A file that belongs to codenav outright (its name is the claim)."""
    if remove:
        if ws.exists(path):
            ws.write(path, None)
    else:
        ws.write(path, content)
