"""What every tool's text shares: the empty answer's reason, what the answer could not
see, the tokens saved, a location, a row of usage figures. Each tool's own renderer lives
in its module."""

from __future__ import annotations

from typing import Any


def loc(item: dict[str, Any], line_key: str = "line") -> str:
    line = item.get(line_key) or item.get("start_line")
    return f"{item['path']}:{line}" if line else item["path"]


def empty(data: dict[str, Any]) -> str:
    why = data.get("empty")
    if not why:
        return ""
    return f"(empty: {why.get('code')}) {why.get('message', '')}"


def saving(data: dict[str, Any]) -> str:
    st = data.get("_stats") or {}
    if not st.get("tokens_full_files"):
        return ""
    return (f"[{st.get('tokens_returned')} tokens returned vs {st['tokens_full_files']} to read "
            f"the files whole]")


def unseen(data: dict[str, Any]) -> str:
    blind = data.get("unseen")
    if not blind:
        return ""
    parts = []
    for key, value in blind.items():
        if isinstance(value, dict):
            value = ", ".join(f"{k} {v}" for k, v in value.items())
        elif isinstance(value, list):
            value = ", ".join(str(v) for v in value)
        parts.append(f"{key.replace('_', ' ')}: {value}")
    return "not seen: " + "; ".join(parts)


def usage_line(row: dict[str, Any]) -> str:
    """One row of the usage figures (``codenav stats``, the status answer's week)."""
    saved = f"{row['saved']:.0%} saved" if "saved" in row else "-"
    return (f"{row['calls']} calls, {row['tokens_returned']} tokens returned vs "
            f"{row['tokens_full_files']} for the files whole ({saved}), "
            f"{row.get('empty', 0)} empty, {row.get('avg_ms', 0)} ms avg")


def at_ref(data: dict[str, Any]) -> str:
    """Which ref a commit answer is for (nothing for the working tree, the usual case), and
    the caller's local edits it includes."""
    ref = data.get("ref")
    if not isinstance(ref, dict):
        return ""
    overlay = ref.get("overlay")
    local = ""
    if isinstance(overlay, dict):
        notes = [str(v) for k, v in overlay.items() if k not in ("files", "deleted")]
        gone = f", {overlay['deleted']} deleted" if overlay.get("deleted") else ""
        local = f" + {overlay.get('files', 0)} local files{gone}" + \
            (f" ({'; '.join(notes)})" if notes else "")
    if ref.get("worktree"):
        return f"[working tree{local}]" if local else ""
    commit = str(ref.get("commit") or "")[:12]
    return f"[ref {ref.get('name') or commit}" + (f" @ {commit}" if ref.get("name") else "") + \
        local + "]"


def frame(text: str, data: dict[str, Any]) -> str:
    """A tool's own text, then what every answer may add."""
    parts = [p for p in (at_ref(data), text.rstrip(), unseen(data), empty(data),
                         saving(data)) if p]
    return "\n".join(parts) or "(no content)"
