"""Reading a checkout's git state from ``.git`` directly (no git process needed)."""

from __future__ import annotations

from pathlib import Path


def git_dir(root: Path) -> Path | None:
    dot = root / ".git"
    if dot.is_dir():
        return dot
    if dot.is_file():  # worktree or submodule: "gitdir: <path>"
        text = dot.read_text(encoding="utf-8", errors="replace").strip()
        if text.startswith("gitdir:"):
            target = Path(text.split(":", 1)[1].strip())
            target = target if target.is_absolute() else (root / target)
            return target if target.is_dir() else None
    return None


def head_commit(root: Path) -> str | None:
    """The commit HEAD points at, or None outside git (or on an unborn branch)."""
    gdir = git_dir(root)
    if gdir is None:
        return None
    try:
        head = (gdir / "HEAD").read_text(encoding="utf-8").strip()
    except OSError:
        return None
    if not head.startswith("ref:"):
        return head or None
    ref = head.split(":", 1)[1].strip()
    common = gdir
    commondir = gdir / "commondir"
    if commondir.is_file():
        common = (gdir / commondir.read_text(encoding="utf-8").strip()).resolve()
    for base in (gdir, common):
        loose = base / ref
        if loose.is_file():
            return loose.read_text(encoding="utf-8").strip() or None
    packed = common / "packed-refs"
    if packed.is_file():
        for line in packed.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.endswith(" " + ref) and not line.startswith("#"):
                return line.split(" ", 1)[0]
    return None
