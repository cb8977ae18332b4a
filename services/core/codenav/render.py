"""Compact text renderings of answers, for the MCP text channel and the CLI.

The structured answer is the contract; this text is what a model reads first, so it is
short: a header line per result, then the code.
"""

from __future__ import annotations

from typing import Any

from codenav.graph import render as graph_render


def _empty(data: dict[str, Any]) -> str:
    empty = data.get("empty")
    if not empty:
        return ""
    return f"(empty: {empty.get('code')}) {empty.get('message', '')}"


def _saving(data: dict[str, Any]) -> str:
    st = data.get("_stats") or {}
    if not st.get("tokens_full_files"):
        return ""
    return (f"[{st.get('tokens_returned')} tokens returned vs {st['tokens_full_files']} to read "
            f"the files whole]")


def _search(data: dict[str, Any]) -> str:
    out = []
    for r in data.get("results", []):
        sym = f" {r['kind']} {r['symbol']}" if r.get("symbol") else f" {r.get('kind', '')}"
        if r.get("parent"):
            sym += f" (in {r['parent']})"
        flags = " [STALE]" if r.get("stale") else ""
        out.append(f"{r['path']}:{r['start_line']}-{r['end_line']}{sym}{flags}")
        out.append(r.get("content", ""))
        if r.get("truncated"):
            out.append(f"... ({r['truncated']})")
        out.append("")
    return "\n".join(out)


def _find(data: dict[str, Any]) -> str:
    return "\n".join(f"{r['path']}  -- {r.get('reason', '')}" for r in data.get("results", []))


def _outline_nodes(nodes: list[dict[str, Any]], depth: int, out: list[str]) -> None:
    for n in nodes:
        exp = " *" if n.get("exported") else ""
        bases = f" : {', '.join(n['bases'])}" if n.get("bases") else ""
        out.append(f"{'  ' * depth}{n['kind']} {n['name']}{bases} "
                   f"[{n['start_line']}-{n['end_line']}]{exp}")
        _outline_nodes(n.get("children", []), depth + 1, out)


def _outline(data: dict[str, Any]) -> str:
    out = [f"{data.get('path')} ({data.get('language')}, {data.get('lines')} lines)"]
    _outline_nodes(data.get("symbols", []), 1, out)
    if data.get("imports"):
        out.append("imports: " + ", ".join(data["imports"][:30]))
    return "\n".join(out)


def _read(data: dict[str, Any]) -> str:
    head = f"{data.get('path')}:{data.get('start_line')}-{data.get('end_line')} " \
           f"of {data.get('total_lines')}"
    tail = f"\n({data['truncated']})" if data.get("truncated") else ""
    redacted = data.get("redacted")
    if redacted:
        tail += f"\n(secrets redacted on lines {', '.join(map(str, redacted['lines']))})"
    return f"{head}\n{data.get('content', '')}{tail}"


def _status(data: dict[str, Any]) -> str:
    out = []
    for r in data.get("repos", []):
        langs = ", ".join(f"{k} {v}" for k, v in list(r.get("languages", {}).items())[:8])
        skipped = r.get("skipped", {})
        out.append(f"{r['name']} ({r['root']}): {r['index_status']}, {r['files']} files, "
                   f"{r['chunks']} chunks; {langs}")
        if skipped.get("total"):
            reasons = ", ".join(f"{k} {v}" for k, v in skipped.get("by_reason", {}).items())
            out.append(f"  skipped {skipped['total']}: {reasons}")
        redacted = r.get("redacted") or {}
        if redacted.get("secrets"):
            files = ", ".join(f"{f['path']} ({f['count']})" for f in
                              redacted.get("by_file", [])[:10])
            out.append(f"  secrets redacted: {redacted['secrets']} in {redacted['files']} "
                       f"files: {files}")
        if r.get("indexing", "on") != "on":
            out.append(f"  indexing: {r['indexing']}")
        run = r.get("last_run")
        if run:
            out.append(f"  last run: {run['state']} ({run['phase']}) {run['files_done']}/"
                       f"{run['files_total']} files" +
                       (f": {run['error']}" if run.get("error") else ""))
        fresh = r.get("freshness") or {}
        if fresh:
            watcher = fresh.get("watcher") or {}
            mode = watcher.get("mode") if watcher.get("alive") else "no watcher"
            out.append(f"  fresh: {'yes' if fresh.get('fresh') else 'no'} ({mode})" +
                       ("; " + "; ".join(fresh.get("reasons", [])) if fresh.get("reasons")
                        else ""))
        emb = r.get("embeddings") or {}
        if emb.get("total"):
            out.append(f"  embeddings: {emb.get('embedded', 0)}/{emb['total']} chunks "
                       f"({emb.get('model')})")
        elif emb.get("note"):
            out.append(f"  embeddings: {emb['note']}")
    used = data.get("usage") or {}
    if used.get("calls"):
        out.append(f"usage, last {used.get('days')} days: {_usage_line(used)} "
                   "(codenav stats for the detail)")
    for reason in (data.get("services") or {}).get("degraded", []):
        out.append(f"degraded: {reason}")
    return "\n".join(out)


def _grep(data: dict[str, Any]) -> str:
    """grep's own format: ``path:line:text`` for a match, ``path-line-text`` for context."""
    out = []
    for f in data.get("results", []):
        last = 0
        for m in f.get("matches", []):
            before = m.get("before", [])
            first = m["line"] - len(before)
            if last and first > last + 1 and (before or m.get("after") is not None):
                out.append("--")
            out.extend(f"{f['path']}-{first + i}-{text}" for i, text in enumerate(before))
            out.append(f"{f['path']}:{m['line']}:{m['text']}")
            out.extend(f"{f['path']}-{m['line'] + 1 + i}-{text}"
                       for i, text in enumerate(m.get("after", [])))
            last = m["line"] + len(m.get("after", []))
    total = data.get("matches_total", 0)
    exact = "" if data.get("total_exact", True) else "at least "
    out.append(f"[{data.get('matches_shown', 0)} shown of {exact}{total} matching lines in "
               f"{data.get('files_matched', 0)} files; {data.get('files_searched', 0)} of "
               f"{data.get('files_candidate', 0)} candidate files searched; index: "
               f"{data.get('accelerated', '')}]")
    if data.get("capped"):
        out.append(f"(capped: {data['capped']['message']})")
    if data.get("timed_out"):
        out.append(f"(timed out: {data['timed_out']['message']})")
    return "\n".join(out)


def _usage_line(row: dict[str, Any]) -> str:
    saved = f"{row['saved']:.0%} saved" if "saved" in row else "-"
    return (f"{row['calls']} calls, {row['tokens_returned']} tokens returned vs "
            f"{row['tokens_full_files']} for the files whole ({saved}), "
            f"{row.get('empty', 0)} empty, {row.get('avg_ms', 0)} ms avg")


def _stats(data: dict[str, Any]) -> str:
    """``codenav stats``: the token economy per tool, then per day."""
    out = [f"since {data.get('since')} ({data.get('days')} days, {data.get('of')}):",
           f"  all tools: {_usage_line(data['total'])}"] if data.get("total") else []
    out.extend(f"  {t['tool']}: {_usage_line(t)}" for t in data.get("by_tool", []))
    if data.get("by_day"):
        out.append("per day:")
        out.extend(f"  {d['day']} {d['tool']}: {_usage_line(d)}" for d in data["by_day"])
    return "\n".join(out)


def _reindex(data: dict[str, Any]) -> str:
    return f"queued {data.get('scope', 'index')} job {data.get('job_id', '')} for " \
           f"{data.get('repo')}" + (f" ({len(data['paths'])} paths)" if data.get("paths") else "")


_RENDERERS = {"search": _search, "find_files": _find, "grep": _grep, "outline": _outline,
              "read": _read, "status": _status, "reindex": _reindex, "stats": _stats,
              **graph_render.RENDERERS}


def render(tool: str, data: dict[str, Any]) -> str:
    text = _RENDERERS.get(tool, lambda d: "")(data).rstrip()
    parts = [p for p in (text, graph_render.unseen(data), _empty(data), _saving(data)) if p]
    return "\n".join(parts) or "(no content)"
