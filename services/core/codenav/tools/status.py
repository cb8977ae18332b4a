"""``status``: what is indexed, skipped and running, and what is degraded."""

from __future__ import annotations

from typing import Any

from codenav.tools.base import Args, Call, Tool
from codenav.tools.text import usage_line


class StatusArgs(Args):
    pass


def handle(call: Call, args: StatusArgs) -> dict[str, Any]:
    """What is indexed: files, languages, skipped files with reasons, refs, last run."""
    from codenav import status, usage

    answer = status.report(call.conn, call.caller, args.repo or None, call.host.settings,
                           call.host.redis, call.host.semantic.client, args.ref or None)
    call.host.usage.flush(call.conn)  # the week's figures include this process's latest
    answer["usage"] = usage.week(call.conn, call.caller)
    return answer


def render(data: dict[str, Any]) -> str:
    """files, languages, skipped files with reasons, refs, last run, queue depth"""
    out = []
    for r in data.get("repos", []):
        langs = ", ".join(f"{k} {v}" for k, v in list(r.get("languages", {}).items())[:8])
        skipped = r.get("skipped", {})
        at = r.get("ref") or {}
        where = f" at {at.get('name') or str(at.get('commit') or '')[:12]}" \
            if at and not at.get("worktree") else ""
        out.append(f"{r['name']} ({r['root'] or r.get('source', '')}){where}: "
                   f"{r['index_status']}, {r['files']} files, {r['chunks']} chunks; {langs}")
        for ref in r.get("refs", [])[:20]:
            kept = f", keeps {len(ref['kept'])}" if ref.get("kept") else ""
            out.append(f"  ref {ref['name']} @ {str(ref['commit'])[:12]}: {ref['files']} files"
                       f"{kept}")
        if skipped.get("total"):
            reasons = ", ".join(f"{k} {v}" for k, v in skipped.get("by_reason", {}).items())
            out.append(f"  skipped {skipped['total']}: {reasons}")
        text_only = r.get("as_text") or {}
        if text_only.get("total"):
            files = ", ".join(f"{f['path']} ({f['reason']})" for f in
                              text_only.get("examples", [])[:5])
            out.append(f"  indexed as plain text (structure not read): {text_only['total']}: "
                       f"{files}")
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
        out.append(f"usage, last {used.get('days')} days: {usage_line(used)} "
                   "(codenav stats for the detail)")
    for reason in (data.get("services") or {}).get("degraded", []):
        out.append(f"degraded: {reason}")
    return "\n".join(out)


TOOL = Tool("status", "Index state, skipped files, last run", StatusArgs, handle, render,
            scoped=False, fresh=False)
