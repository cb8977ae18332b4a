"""Compact text for the graph tools' answers (the MCP text channel and the CLI)."""

from __future__ import annotations

from typing import Any


def _loc(item: dict[str, Any], line_key: str = "line") -> str:
    line = item.get(line_key) or item.get("start_line")
    return f"{item['path']}:{line}" if line else item["path"]


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


def definition(data: dict[str, Any]) -> str:
    out = []
    for r in data.get("results", []):
        out.append(f"{r['kind']} {r['qualname']}  {_loc(r)}-{r['end_line']}")
        out.append(f"  {r['signature']}")
        if r.get("doc"):
            out.append(f"  \"{r['doc'][:300]}\"")
        for t in r.get("types", []):
            out.append(f"  uses {t['kind']} {t['qualname']} ({_loc(t)}): {t['signature']}")
        if r.get("unresolved_types"):
            out.append("  unresolved types: " + ", ".join(r["unresolved_types"]))
    return "\n".join(out)


def references(data: dict[str, Any]) -> str:
    s = data.get("summary", {})
    out = [f"{s.get('verified', 0)} verified, {s.get('potential', 0)} potential reference(s) "
           f"in {s.get('files', 0)} file(s)"]
    for v in data.get("verified", []):
        scope = f" in {v['scope']}" if v.get("scope") else ""
        out.append(f"  {_loc(v)} {v['kind']}{scope} [{v.get('how', '')}]")
    if data.get("potential"):
        out.append("potential (name only):")
        for p in data["potential"]:
            scope = f" in {p['scope']}" if p.get("scope") else ""
            out.append(f"  {_loc(p)} {p['kind']}{scope} -- {p.get('reason', '')}")
    return "\n".join(out)


def _files(title: str, files: list[dict[str, Any]]) -> list[str]:
    if not files:
        return []
    out = [f"{title}:"]
    for f in files:
        exports = ", ".join(f.get("exports", [])[:5])
        extra = f" exports {exports}" if exports else ""
        via = f" via {f['via']}" if f.get("via") and f.get("via") != "reference" else \
            (" (reference, no import)" if f.get("via") == "reference" else "")
        out.append(f"  {'  ' * (f.get('depth', 1) - 1)}{f['path']} ({f.get('language', '')}, "
                   f"imported by {f.get('imported_by', 0)}){via}{extra}")
    return out


def dependencies(data: dict[str, Any]) -> str:
    out = [f"{data.get('path')} ({data.get('language')})"]
    out += _files("imports", data.get("imports", []))
    out += _files("imported by", data.get("importers", []))
    if data.get("external"):
        out.append("external: " + ", ".join(data["external"][:30]))
    return "\n".join(out)


def impact(data: dict[str, Any]) -> str:
    s = data.get("summary", {})
    if data.get("target_kind") == "file":
        out = [f"{s.get('files', 0)} file(s) depend on {data.get('target')}"]
        out += [f"  {'  ' * (f['depth'] - 1)}{f['path']} ({f['via']})"
                for f in data.get("files", [])]
    else:
        out = [f"{s.get('dependents', 0)} dependent(s) in {s.get('files', 0)} file(s) of "
               f"{data.get('target')}: " + ", ".join(f"{k} {v}" for k, v in
                                                    s.get("by_relation", {}).items())]
        for d in data.get("dependents", []):
            name = d["qualname"] or "(file level)"
            out.append(f"  {'  ' * (d['depth'] - 1)}{name} {d['relation']} {d['depends_on']} "
                       f"({d['path']}:{d['line']})")
        if data.get("reexports"):
            out.append("re-exported by: " + ", ".join(f"{r['path']}:{r['line']}"
                                                      for r in data["reexports"]))
    if data.get("chains"):
        out.append("chains:")
        out += [f"  {c}" for c in data["chains"][:10]]
    return "\n".join(out)


def implementations(data: dict[str, Any]) -> str:
    out = []
    for r in data.get("results", []):
        via = f" via {r['via']}" if r.get("via") else ""
        methods = ", ".join(m["name"] for m in r.get("methods", [])[:12])
        out.append(f"{r['relation']} {r['qualname']} ({_loc(r)}){via}: {methods}")
    for p in data.get("potential", []):
        out.append(f"potential: {p['qualname']} ({_loc(p)}) -- {p['reason']}")
    return "\n".join(out)


def skeleton(data: dict[str, Any]) -> str:
    out = []
    for f in data.get("files", []):
        names = ", ".join(e["name"] for e in f.get("exports", []))
        more = f" (+{f['exports_total'] - len(f['exports'])})" if f.get("exports_total") else ""
        out.append(f"{f['path']}: {names}{more}")
    return "\n".join(out)


RENDERERS = {"definition": definition, "references": references,
             "dependencies": dependencies, "impact": impact,
             "implementations": implementations, "skeleton": skeleton}
