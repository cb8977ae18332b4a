"""Reading a checkout's git state from ``.git`` directly (no git process needed)."""

from __future__ import annotations

from pathlib import Path

from codenav.proc import poll_until


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


def _head(root: Path) -> tuple[Path, str] | None:
    """The git directory and what its HEAD says, or None outside git."""
    gdir = git_dir(root)
    if gdir is None:
        return None
    try:
        return gdir, (gdir / "HEAD").read_text(encoding="utf-8").strip()
    except OSError:
        return None


def head_commit(root: Path) -> str | None:
    """The commit HEAD points at, or None outside git (or on an unborn branch)."""
    found = _head(root)
    if found is None:
        return None
    gdir, head = found
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


def head_branch(root: Path) -> str | None:
    """The branch checked out (``main``), or None outside git or on a detached HEAD."""
    found = _head(root)
    if found is None or not found[1].startswith("ref:"):
        return None
    head = found[1]
    return head.split(":", 1)[1].strip().removeprefix("refs/heads/") or None


def checkout_in_progress(root: Path) -> bool:
    """git holds ``index.lock`` while it rewrites the work tree (checkout, merge, rebase)."""
    gdir = git_dir(root)
    return gdir is not None and (gdir / "index.lock").exists()


def wait_for_checkout(root: Path, timeout: float = 60.0) -> bool:
    """Wait until no git operation holds the index; False if it is still held."""
    return poll_until(lambda: not checkout_in_progress(root), timeout, 0.05)


def changed_since(root: Path, old: str | None) -> list[str] | None:
    """Paths that differ between commit ``old`` and the work tree (committed changes since
    ``old``, plus staged, unstaged and untracked files); None when git cannot tell."""
    import subprocess

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", "-c", "safe.directory=*", "-C", str(root), *args],
                                  capture_output=True, timeout=60, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.decode("utf-8", "surrogateescape") if done.returncode == 0 else None

    paths: set[str] = set()
    if old:
        diff = git("diff", "--name-only", "-z", "--no-renames", old, "HEAD")
        if diff is None:
            return None
        paths.update(p for p in diff.split("\0") if p)
    status = git("status", "--porcelain", "-z", "--untracked-files=all", "--no-renames")
    if status is None:
        return None
    for entry in status.split("\0"):
        if len(entry) > 3:
            paths.add(entry[3:])
    return sorted(paths)
