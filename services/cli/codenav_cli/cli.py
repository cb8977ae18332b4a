"""The ``codenav`` command line.

Every command prints one clear error line plus a hint on failure, never a traceback.
Every tool of the registry is a subcommand named like it (``find-files``; ``find_files``
and ``find`` work too), its arguments made from the tool's model; ``--json`` prints exactly
what the MCP tool returns as structured content. ``stats`` prints the usage figures,
``snapshot`` exports and imports the index.
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import contextlib
import json
import os
import shlex
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin

from codenav.client import ApiClient, endpoint, stack_file
from codenav.config import Settings
from codenav.errors import CodenavError, ConfigError, Unavailable
from codenav.tools import TOOLS, render
from codenav.tools.base import Tool
from codenav.tools.text import frame, usage_line

TERMINAL = {"finished", "failed", "stopped", "canceled"}
WAITING = {"queued", "scheduled", "deferred"}
EMBEDDER_PATIENCE_S = 60.0
"""An embedder that does not answer is reported after this long (it may be starting)."""


class _Session:
    """One API client for the command's whole life, on one event loop of its own.

    Waiting for an index polls the API four times a second. A client made for each call
    loads the TLS certificates again and opens a new connection: about 30 ms of CPU per
    poll, a tenth of a core taken from the indexer on a 2-core machine. The client is made
    again only when the endpoint changes (a stack started again with a new port or token)."""

    def __init__(self) -> None:
        self._runner: asyncio.Runner | None = None
        self._client: ApiClient | None = None
        self._key: tuple[str, str] | None = None

    def request(self, settings: Settings, method: str, path: str,
                body: dict[str, Any] | None) -> dict[str, Any]:
        key = endpoint(settings)
        if self._runner is None:
            self._runner = asyncio.Runner()
        if self._client is None or key != self._key:
            if self._client is not None:
                self._runner.run(self._client.aclose())
            self._client, self._key = ApiClient(*key), key
        return self._runner.run(self._client.request(method, path, body))

    def close(self) -> None:
        if self._runner is None:
            return
        if self._client is not None:
            with contextlib.suppress(Exception):
                self._runner.run(self._client.aclose())
        self._runner.close()
        self._runner = self._client = self._key = None


_session = _Session()
atexit.register(_session.close)


def _api(settings: Settings, method: str, path: str,
         body: dict[str, Any] | None = None) -> dict[str, Any]:
    return _session.request(settings, method, path, body)


def _bar(done: int, total: int, started: float, phase: str, name: str) -> str:
    elapsed = max(time.monotonic() - started, 1e-6)
    rate = done / elapsed
    width = 28
    frac = done / total if total else 0.0
    filled = int(width * frac)
    eta = (total - done) / rate if rate > 0 and total else 0
    return (f"\rindexing {name} [{'#' * filled}{'.' * (width - filled)}] {done}/{total} files "
            f"{rate:,.0f} files/s ETA {eta:,.0f}s ({phase})   ")


def wait_for_job(settings: Settings, job_id: str, name: str, quiet: bool = False,
                 timeout: float = 24 * 3600, baseline: int | None = None) -> dict[str, Any]:
    """Poll a job until its work is done, drawing a progress bar on stderr.

    Done means the job ended, or a full run of the repository newer than ``baseline`` (by
    default the latest run when the wait begins) has finished while the job still waited:
    another request did the work, and the job will find nothing left to do. The bar shows
    the repository's run in progress, whichever job runs it, so it never shows a run that
    stopped."""
    started = time.monotonic()
    info: dict[str, Any] = {}
    tty = sys.stderr.isatty()
    last_draw = 0.0
    while time.monotonic() - started < timeout:
        info = _api(settings, "GET", f"/v1/jobs/{job_id}")
        run = info.get("run") or {}
        latest = info.get("repo_run") or {}
        if baseline is None:
            baseline = int(latest.get("id") or 0)
        shown = latest if latest.get("state") == "running" else run
        if not quiet and shown and (tty or time.monotonic() - last_draw > 2.0):
            last_draw = time.monotonic()
            line = _bar(shown.get("files_done", 0), shown.get("files_total", 0), started,
                        shown.get("phase", ""), name)
            sys.stderr.write(line if tty else line.strip("\r") + "\n")
            sys.stderr.flush()
        if info.get("state") in TERMINAL and (run.get("state") != "running"):
            break
        if info.get("state") in WAITING and int(latest.get("id") or 0) > baseline and \
                latest.get("scope") == "full" and latest.get("state") == "done":
            info = {**info, "run": latest, "covered_by": latest.get("job_id")}
            break
        time.sleep(0.25)
    if not quiet and tty:
        sys.stderr.write("\n")
    return info


def _check_done(info: dict[str, Any], what: str) -> dict[str, Any]:
    """The run of a job that ended, or a clear error for one that failed or stopped."""
    run = info.get("run") or {}
    if info.get("state") == "failed" or run.get("state") == "failed":
        raise CodenavError(f"{what} failed: {info.get('error') or run.get('error')}",
                           hint="see the worker log")
    result = info.get("result") or {}
    if result.get("interrupted") or run.get("state") == "stopped":
        reason = result.get("reason") or run.get("error")
        raise CodenavError(f"{what} stopped before its end ({reason})",
                           hint="it resumes when the stack runs again")
    return run


class EmbeddingProgress:
    """The embedding phase: a progress line while a repository's chunks are embedded.

    An embedder still loading its model (or being restarted by ``codenav up``, as
    ``starting`` tells) is waited for, with one line saying so; one that does not answer
    for ``EMBEDDER_PATIENCE_S`` is reported once, and the phase ends."""

    def __init__(self, settings: Settings, repo: str,
                 starting: Callable[[], bool] | None = None) -> None:
        self.settings, self.repo = settings, repo
        self.starting = starting
        self.started = time.monotonic()
        self.first: int | None = None
        self.done = False
        self._last = 0.0
        self._said_waiting = False
        self._unreachable_since: float | None = None

    def _wait_for_embedder(self, note: str) -> bool:
        """True while the embedder is worth waiting for (after saying so once)."""
        now = time.monotonic()
        if self._unreachable_since is None:
            self._unreachable_since = now
        loading = "loading" in note or "not ready" in note or \
            (self.starting is not None and self.starting())
        if loading or now - self._unreachable_since < EMBEDDER_PATIENCE_S:
            if not self._said_waiting:
                sys.stderr.write("semantic search: waiting for the embedder to load its "
                                 "model (answers are lexical meanwhile)\n")
                self._said_waiting = True
            return True
        return False

    def poll(self) -> bool:
        """Draw the line (at most every 2 s); True once nothing is left to embed."""
        tty = sys.stderr.isatty()
        if self.done or time.monotonic() - self._last < (2.0 if tty else 10.0):
            return self.done
        self._last = time.monotonic()
        try:
            status = _api(self.settings, "POST", "/v1/status", {"repo": self.repo})
        except CodenavError:
            return False
        emb = (status.get("repos") or [{}])[0].get("embeddings") or {}
        if not emb.get("configured"):
            self.done = True
            if emb.get("note"):
                sys.stderr.write(f"semantic search: {emb['note']}\n")
            return True
        if emb.get("available") is False:
            if self._wait_for_embedder(str(emb.get("note", ""))):
                return False
            self.done = True
            sys.stderr.write(f"semantic search: {emb.get('note')}\n")
            return True
        self._unreachable_since = None
        total, embedded = int(emb.get("total", 0)), int(emb.get("embedded", 0))
        if not total:  # nothing indexed yet, or no chunk long enough to get a vector
            repo = (status.get("repos") or [{}])[0]
            if repo.get("index_status") == "ready" and repo.get("chunks"):
                self.done = True
                sys.stderr.write(f"semantic search: no chunk of {self.repo} has "
                                 f"{emb.get('min_lines', 6)} lines or more; nothing to embed\n")
            return self.done
        if self.first is None:
            self.first = embedded
            self.started = time.monotonic()
        elapsed = max(time.monotonic() - self.started, 1e-6)
        rate = (embedded - self.first) / elapsed
        eta = (total - embedded) / rate if rate > 0 else 0
        width = 28
        filled = int(width * embedded / total) if total else width
        line = (f"embedding {self.repo} [{'#' * filled}{'.' * (width - filled)}] "
                f"{embedded}/{total} chunks {rate:,.0f} chunks/s ETA {eta:,.0f}s")
        sys.stderr.write(f"\r{line}   " if tty else f"{line}\n")
        if total and embedded >= total:
            if tty:
                sys.stderr.write("\n")
            self.done = True
        sys.stderr.flush()
        return self.done


def wait_for_graph(settings: Settings, info: dict[str, Any], name: str, quiet: bool) -> None:
    """A first index leaves the code graph to its own job: wait for it too."""
    graph_job = (info.get("result") or {}).get("graph_job")
    if not graph_job:
        return
    if not quiet:
        sys.stderr.write(f"building the code graph of {name}...\n")
    started = time.monotonic()
    done = wait_for_job(settings, graph_job, name, quiet=True)
    # a graph job that filled many deferred facts builds the graph in a job of its own
    while done.get("state") == "finished" and \
            (graph_job := (done.get("result") or {}).get("graph_job")):
        done = wait_for_job(settings, graph_job, name, quiet=True)
    if not quiet:
        state = "done" if done.get("state") == "finished" else done.get("state")
        sys.stderr.write(f"code graph {state} in {time.monotonic() - started:.1f}s\n")


def cmd_index(args: argparse.Namespace, settings: Settings) -> int:
    root = Path(args.path).expanduser().resolve()
    if not root.is_dir():
        raise ConfigError(f"{args.path} is not a directory")
    body: dict[str, Any] = {"root": str(root), "name": args.name, "refs": args.ref or []}
    if args.follow is not None:
        body["follow"] = args.follow
    if args.keep is not None:
        body["keep"] = args.keep
    data = _api(settings, "POST", "/v1/repos", body)
    repo = data["repo"]
    job_id = data.get("job_id")
    if args.no_wait or not job_id:
        print(f"queued indexing of {repo['name']} ({root}) as job {job_id}" +
              (f", refs as job {data['refs_job_id']}" if data.get("refs_job_id") else ""))
        return 0
    info = wait_for_job(settings, job_id, repo["name"], quiet=args.quiet)
    run = _check_done(info, "indexing")
    refs_job = data.get("refs_job_id") or (info.get("result") or {}).get("refs_job")
    if run:
        wait_for_graph(settings, info, repo["name"], args.quiet)
        print(f"indexed {repo['name']}: {run.get('files_total', 0)} files "
              f"({run.get('files_parsed', 0)} parsed) in {run.get('seconds', '?')}s")
    if refs_job:
        _print_refs(_check_refs(wait_for_job(settings, refs_job, repo["name"],
                                             quiet=args.quiet), repo["name"]))
    if args.embeddings:
        progress = EmbeddingProgress(settings, repo["name"])
        while not progress.poll():
            time.sleep(0.5)
    return 0


def _check_refs(info: dict[str, Any], name: str) -> dict[str, Any]:
    _check_done(info, f"indexing the refs of {name}")
    result: dict[str, Any] = info.get("result") or {}
    if result.get("refused"):
        raise CodenavError(f"the refs of {name} were not indexed: {result['refused']}")
    return result


def _print_refs(result: dict[str, Any]) -> None:
    for moved in result.get("moved", []):
        was = f" (was {str(moved['previous'])[:12]})" if moved.get("previous") else ""
        how = "already indexed" if moved.get("reused") else \
            f"{moved.get('files', 0)} files, {moved.get('changed', 0)} changed, " \
            f"{moved.get('parsed', 0)} parsed in {moved.get('seconds', '?')}s"
        print(f"ref {moved['ref']} -> {str(moved['commit'])[:12]}{was}: {how}")
    for name in result.get("dropped", []):
        print(f"ref {name} dropped (gone from git)")
    if not result.get("moved") and not result.get("dropped") and not result.get("failed"):
        print("refs up to date")
    failed = result.get("failed") or {}
    if failed:
        raise CodenavError("not indexed: " + "; ".join(f"{n}: {why}" for n, why in
                                                      failed.items()),
                           hint="fetch the branch into the repository's git, or name one it has")


def cmd_ref(args: argparse.Namespace, settings: Settings) -> int:
    from urllib.parse import quote

    name = args.repo or settings.repo
    if not name:
        repos_seen = _api(settings, "GET", "/v1/repos")["repos"]
        if len(repos_seen) != 1:
            raise ConfigError("say which repository: --repo NAME",
                              hint="repositories: " + ", ".join(r["name"] for r in repos_seen))
        name = repos_seen[0]["name"]
    base = f"/v1/repos/{quote(name, safe='')}/refs"
    if args.ref_cmd == "list":
        data = _api(settings, "GET", base)
        lines = [f"{r['name']}\t{str(r['commit'])[:12]}\t{r['files']} files\t"
                 f"{_when(r.get('moved_at'))}" + (f"\tkeeps {len(r['kept'])}"
                                                  if r.get("kept") else "")
                 for r in data["refs"]]
        if data.get("follow"):
            lines.append(f"follows {', '.join(data['follow'])} (keeps {data['keep']})")
        _emit(data, args.json, "\n".join(lines) or "no ref is indexed")
    elif args.ref_cmd == "add":
        body: dict[str, Any] = {"refs": args.names}
        if args.follow is not None:
            body["follow"] = args.follow
        if args.keep is not None:
            body["keep"] = args.keep
        data = _api(settings, "POST", base, body)
        if args.no_wait or not data.get("job_id"):
            _emit(data, args.json, f"queued as job {data.get('job_id')}")
            return 0
        result = _check_refs(wait_for_job(settings, data["job_id"], name, quiet=args.json),
                             name)
        if args.json:
            _emit(result, True, "")
        else:
            _print_refs(result)
    else:
        data = _api(settings, "DELETE", f"{base}/{quote(args.name, safe='/')}")
        collected = data.get("collected", {})
        _emit(data, args.json, f"dropped ref {data['dropped']}: collected "
              f"{collected.get('trees', 0)} trees, {collected.get('contents', 0)} contents, "
              f"{collected.get('vectors', 0)} vectors")
    return 0


def cmd_publish(args: argparse.Namespace, settings: Settings) -> int:
    from codenav_cli import publish

    url = args.url or settings.url
    token = args.token or settings.token
    if not url:
        raise ConfigError("no server to publish to", hint="pass --url or set CODENAV_URL")
    if not token:
        raise ConfigError("publishing needs a write token",
                          hint="pass --token or set CODENAV_TOKEN (codenav token create "
                          "--role write)")
    path = Path(args.path).expanduser().resolve()
    cache = Path(args.cache).expanduser() if args.cache else \
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "codenav" / "publish"
    result = publish.run(url, token, args.repo, args.ref, path, cache, args.commit,
                         args.default, args.part_bytes, not args.no_wait, args.embed_url or "")
    if args.json:
        _emit(result, True, "")
        return 0
    if result.get("up_to_date"):
        print(f"{args.ref} is at {result['commit'][:12]} already")
    else:
        moved = (result.get("result") or {}).get("moved") or []
        how = f"; {moved[0]['changed']} files changed since the tree it derives from" \
            if moved and not moved[0].get("reused") else ""
        state = "queued as job " + str(result.get("job_id")) if args.no_wait else \
            f"moved to {result['commit'][:12]}"
        print(f"{args.repo} {args.ref}: {state}{how}")
    sent = result.get("sent") or {}
    if sent.get("vectors"):
        print(f"{sent['vectors']} vectors sent")
    for note in sent.get("notes", []):
        print(f"note: {note}")
    print(result["line"])
    return 0


def _tool_body(args: argparse.Namespace, tool: Tool, settings: Settings) -> dict[str, Any]:
    """The arguments given on the command line that differ from the model's defaults (the
    server's model fills in the rest)."""
    fields = tool.args.model_fields
    body = {name: getattr(args, name) for name, info in fields.items()
            if hasattr(args, name) and (info.is_required() or getattr(args, name) != info.default)}
    if not body.get("repo") and settings.repo:
        body["repo"] = settings.repo
    return body


def cmd_tool(args: argparse.Namespace, settings: Settings) -> int:
    tool = TOOLS[args.tool]
    data = _api(settings, "POST", f"/v1/{tool.name}", _tool_body(args, tool, settings))
    sys.stdout.write((json.dumps(data, indent=2, ensure_ascii=False) if args.json
                      else render(tool.name, data)) + "\n")
    return 0


def _plain(annotation: Any) -> tuple[Any, bool]:
    """(the type without None, whether it is a list)."""
    args = [a for a in get_args(annotation) if a is not type(None)] \
        if get_origin(annotation) in (Union, UnionType) else [annotation]
    inner = args[0] if len(args) == 1 else str
    if get_origin(inner) is list:
        return (get_args(inner) or (str,))[0], True
    return inner, False


def add_tool_parser(sub: Any, tool: Tool) -> None:
    """``codenav <tool>``: the tool's model as arguments (positional ones as its ``Cli``
    says, every other field a ``--flag``), ``--json`` for the structured answer."""
    command = tool.name.replace("_", "-")
    aliases = ([tool.name] if command != tool.name else []) + list(tool.cli.aliases)
    p = sub.add_parser(command, aliases=aliases, help=tool.summary)
    for name, info in tool.args.model_fields.items():
        kind, many = _plain(info.annotation)
        helptext = tool.cli.help.get(name) or info.description or ""
        if not info.is_required() and info.default not in (None, False, True):
            helptext = f"{helptext} (default {info.default})".strip()
        options: dict[str, Any] = {"help": helptext or None,
                                   "default": None if info.is_required() else info.default}
        if get_origin(kind) is Literal:
            options["choices"] = get_args(kind)
        elif kind is int:
            options["type"] = int
        if name in tool.cli.positional:
            if many:
                options["nargs"] = "*"
            elif not info.is_required():
                options["nargs"] = "?"
            p.add_argument(name, **options)
            continue
        flag = tool.cli.flags.get(name) or "--" + name.replace("_", "-")
        if kind is bool:
            options.pop("type", None)
            options["action"] = "store_false" if info.default is True else "store_true"
        elif many:
            options["action"] = "append"
        p.add_argument(flag, *tool.cli.also.get(name, ()), dest=name, **options)
        if name in tool.cli.off:
            p.add_argument(*tool.cli.off[name], dest=name, action="store_false",
                           help=tool.cli.help.get(f"{name}:off"))
    p.add_argument("--json", action="store_true", help="print the structured result")
    p.set_defaults(func=cmd_tool, tool=tool.name)


def cmd_stats(args: argparse.Namespace, settings: Settings) -> int:
    from codenav import usage

    if _admin_mode(settings) == "api":
        data = _api(settings, "GET", f"/v1/stats?days={int(args.days)}")
    else:
        data = _operator(settings, lambda conn, caller: usage.summary(conn, caller, args.days))
    _emit(data, args.json, frame(_stats_text(data), data))
    return 0


def _stats_text(data: dict[str, Any]) -> str:
    """``codenav stats``: the token economy per tool, then per day."""
    out = [f"since {data.get('since')} ({data.get('days')} days, {data.get('of')}):",
           f"  all tools: {usage_line(data['total'])}"] if data.get("total") else []
    out.extend(f"  {t['tool']}: {usage_line(t)}" for t in data.get("by_tool", []))
    if data.get("by_day"):
        out.append("per day:")
        out.extend(f"  {d['day']} {d['tool']}: {usage_line(d)}" for d in data["by_day"])
    return "\n".join(out)


def _db_settings(settings: Settings) -> Settings:
    """Settings with a database URL: from the environment, or the local stack's file."""
    if settings.database_url:
        return settings
    path = stack_file(settings)
    if path.is_file():
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("database_url"):
            return Settings.load(env={**os.environ, "CODENAV_DATABASE_URL": data["database_url"]})
    raise ConfigError("no database configured",
                      hint="set CODENAV_DATABASE_URL, or start the local stack with `codenav up`")


def _admin_mode(settings: Settings) -> str:
    """``api`` when an API is configured (CODENAV_URL, or the local stack's file): the
    server checks the token's role; else ``database`` (the operator, with direct access:
    ``docker compose exec api codenav ...``)."""
    if settings.url or stack_file(settings).is_file():
        return "api"
    if settings.database_url:
        return "database"
    raise ConfigError("no codenav API or database configured",
                      hint="set CODENAV_URL and an admin CODENAV_TOKEN, start `codenav up`, "
                      "or set CODENAV_DATABASE_URL on the server")


def _operator(settings: Settings, work: Any) -> dict[str, Any]:
    """Run an admin action as the operator, straight on the database."""
    from codenav.access import Caller
    from codenav.db.connect import connect

    with connect(_db_settings(settings)) as conn:
        result: dict[str, Any] = work(conn, Caller.operator())
        return result


def _emit(data: dict[str, Any], as_json: bool, text: str) -> None:
    sys.stdout.write((json.dumps(data, indent=2, ensure_ascii=False, default=str)
                      if as_json else text) + "\n")


def _when(value: str | None) -> str:
    return value[:16].replace("T", " ") if value else "-"


def cmd_token(args: argparse.Namespace, settings: Settings) -> int:
    from codenav import admin

    mode = _admin_mode(settings)
    if args.token_cmd == "create":
        repos = [r.strip() for r in (args.repos or "").split(",") if r.strip()]
        body = {"name": args.name, "role": args.role, "team": args.team,
                "repos": repos or None, "expires": args.expires}
        data = _api(settings, "POST", "/v1/tokens", body) if mode == "api" else _operator(
            settings, lambda conn, caller: admin.create(conn, caller, args.name, args.role,
                                                        args.team, repos, args.expires))
        if args.json:
            _emit(data, True, "")
            return 0
        print(data["token"])
        limits = f", repositories {', '.join(data['repos'])}" if data.get("repos") else ""
        expiry = f", expires {_when(data.get('expires_at'))}" if data.get("expires_at") else ""
        created = " (new team)" if data.get("team_created") else ""
        sys.stderr.write(f"token {data['id']} ({data['name']}): {data['role']} in team "
                         f"{data['team']}{created}{limits}{expiry}; it is shown only once\n")
    elif args.token_cmd == "list":
        data = _api(settings, "GET", "/v1/tokens") if mode == "api" else _operator(
            settings, admin.list_tokens)
        lines = ["id\tname\trole\tteam\trepos\tstate\tlast used\texpires"]
        for t in data["tokens"]:
            limit = t["repos"] if isinstance(t["repos"], str) else ",".join(t["repos"]) or "-"
            lines.append(f"{t['id']}\t{t['name']}\t{t['role']}\t{t['team']}\t{limit}\t"
                         f"{t['state']}\t{_when(t['last_used_at'])}\t{_when(t['expires_at'])}")
        _emit(data, args.json, "\n".join(lines) + f"\n({data['note']})")
    elif args.token_cmd == "revoke":
        data = _api(settings, "DELETE", f"/v1/tokens/{args.id}") if mode == "api" else \
            _operator(settings, lambda conn, caller: admin.revoke(conn, caller, args.id))
        _emit(data, args.json, f"token {args.id} ({data['name']}) revoked; {data['note']}")
    return 0


def cmd_team(args: argparse.Namespace, settings: Settings) -> int:
    from codenav import admin

    data = _api(settings, "GET", "/v1/teams") if _admin_mode(settings) == "api" else \
        _operator(settings, admin.list_teams)
    lines = []
    for t in data["teams"]:
        counts = f"\t{t['repos']} repos\t{t['active_tokens']} active tokens" \
            if "repos" in t else ""
        lines.append(f"{t['name']}{' (yours)' if t.get('yours') else ''}{counts}\t"
                     f"created {_when(t['created_at'])}")
    _emit(data, args.json, "\n".join(lines) or "no team")
    return 0


def cmd_repo(args: argparse.Namespace, settings: Settings) -> int:
    from urllib.parse import quote

    from codenav import access, admin

    mode = _admin_mode(settings)
    if args.repo_cmd == "list":
        if mode == "api":
            data = _api(settings, "GET", "/v1/repos")
        else:
            data = _operator(settings, lambda conn, caller: {"repos": [
                {"name": r.name, "team": r.team, "root": r.root, "indexing": r.index_enabled}
                for r in access.visible_repos(conn, caller)]})
        _emit(data, args.json, "\n".join(
            f"{r['name']}\t{r['team']}\t{r['root']}" + ("" if r["indexing"] else
                                                       "\t(indexing off)")
            for r in data["repos"]) or "no repository")
    elif args.repo_cmd == "rm":
        if mode == "api":
            data = _api(settings, "DELETE", f"/v1/repos/{quote(args.name, safe='')}")
        else:
            def work(conn: Any, caller: Any) -> dict[str, Any]:
                scope = access.resolve(conn, caller, args.name)
                answer = admin.delete(conn, caller, scope)
                _forget(settings, scope.id)
                return answer
            data = _operator(settings, work)
        gone = data["collected"]
        _emit(data, args.json, f"deleted {data['deleted']} (team {data['team']}); collected "
              f"{gone['contents']} unshared contents and {gone['vectors']} vectors")
    return 0


def _forget(settings: Settings, repo_id: int) -> None:
    from codenav.jobs import enqueue

    with contextlib.suppress(CodenavError):
        enqueue.forget_repo(enqueue.connect_redis(settings), repo_id)


def cmd_audit(args: argparse.Namespace, settings: Settings) -> int:
    from codenav import admin

    data = _api(settings, "GET", f"/v1/audit?limit={args.limit}") \
        if _admin_mode(settings) == "api" else \
        _operator(settings, lambda conn, caller: admin.audit(conn, caller, args.limit))
    lines = [f"{_when(e['at'])}\t{e['team'] or '-'}\t{e['actor']}\t{e['action']}\t"
             f"{e['target']}" for e in data["entries"]]
    _emit(data, args.json, "\n".join(lines) or "the audit trail is empty")
    return 0


def _root_maps(values: list[str] | None) -> tuple[dict[str, str], list[str]]:
    """``--root NAME=PATH`` (by name) and ``--root PATH`` (by directory name, or the only
    repository of the snapshot)."""
    named: dict[str, str] = {}
    bare: list[str] = []
    for value in values or []:
        name, eq, path = value.partition("=")
        if eq and name and "/" not in name:
            named[name] = str(Path(path).expanduser().resolve())
        else:
            bare.append(str(Path(value).expanduser().resolve()))
    return named, bare


def embedder_model(settings: Settings) -> Callable[[], tuple[str, int] | None]:
    """The model the stack's embedder serves, asked when called (None: no embedder is
    configured or it does not answer)."""
    url = settings.embed_url
    if not url:
        path = stack_file(settings)
        with contextlib.suppress(OSError, ValueError):
            url = json.loads(path.read_text(encoding="utf-8")).get("embed_url") or ""

    def ask() -> tuple[str, int] | None:
        from codenav.embed.client import served_model

        return served_model(url, settings.embed_model, settings.embed_key, 30.0) if url \
            else None

    return ask


def cmd_snapshot(args: argparse.Namespace, settings: Settings) -> int:
    from codenav import admin, snapshot

    remote = bool(settings.url)
    if args.snapshot_cmd == "export" and args.physical:
        from codenav_cli import pgseed

        if args.repo or args.ref:
            raise ConfigError("a physical seed copies the whole store",
                              hint="drop --repo/--ref, or export a logical snapshot")
        data = pgseed.export(settings.home_path, Path(args.file).expanduser().resolve())
        _emit(data, args.json, f"exported the store of {settings.home_path} "
              f"({', '.join(data['repos']) or 'no repository'}) to {data['path']}: "
              f"{data['bytes'] / 1e6:.1f} MB ({data['store_bytes'] / 1e6:.0f} MB of data "
              f"files) in {data['seconds']}s")
        return 0
    if args.snapshot_cmd == "export":
        out = Path(args.file).expanduser()
        if remote:
            data = _download_snapshot(settings, out, args.repo, args.ref)
        else:
            data = _operator(settings, lambda conn, caller: admin.snapshot_export(
                conn, caller, out, args.repo, args.ref))
        _emit(data, args.json, f"exported {', '.join(data['repos'])} to {data['path']}: "
              f"{data['bytes'] / 1e6:.1f} MB, {data['rows']['files']} files, "
              f"{data['rows']['chunks']} chunks, {data['rows']['embeddings']} vectors in "
              f"{data['seconds']}s")
        return 0
    path = Path(args.file).expanduser()
    from codenav_cli import pgseed

    if pgseed.is_physical(path):
        raise ConfigError(f"{path.name} is a physical seed: a copy of a whole store, not "
                          "merged into one", hint=f"start an empty home from it: codenav up "
                          f"--seed {path}")
    named, bare = _root_maps(args.root)
    if bare:
        named = {**snapshot.map_roots(snapshot.read_manifest(path), bare), **named}
    if remote:
        data = _upload_snapshot(settings, path, named, args.team, not args.no_vectors,
                                args.skip_existing, args.local_roots)
    else:
        model = embedder_model(settings)
        data = _operator(settings, lambda conn, caller: admin.snapshot_import(
            conn, settings, caller, path, named, args.team, not args.no_vectors, model,
            args.skip_existing, args.local_roots))
    if data.get("skipped"):
        _emit(data, args.json, f"nothing imported: {data['skipped']}")
        return 0
    lines = [f"imported {r['team']}/{r['name']} at {r['root']}"
             + (f" (commit {r['commit'][:12]})" if r.get("commit") else "")
             + (" (replaced its file list)" if r.get("replaced") else "")
             for r in data["repos"]]
    ins = data["inserted"]
    lines.append(f"{ins['files']} files, {ins['contents']} new contents "
                 f"({data['rows']['contents'] - ins['contents']} already here), "
                 f"{ins['embeddings']} new vectors in {data['seconds']}s")
    lines += [f"note: {n}" for n in data.get("notes", [])]
    _emit(data, args.json, "\n".join(lines))
    return 0


def _download_snapshot(settings: Settings, out: Path, names: list[str] | None,
                       ref: str | None) -> dict[str, Any]:
    from codenav.client import download

    params: list[tuple[str, str]] = [("repo", n) for n in names or []]
    if ref:
        params.append(("ref", ref))
    return download(settings, "/v1/snapshot", params, out)


def _upload_snapshot(settings: Settings, path: Path, roots: dict[str, str], team: str | None,
                     vectors: bool, skip_existing: bool, local_roots: bool) -> dict[str, Any]:
    from codenav.client import upload

    params: list[tuple[str, str]] = [("root", f"{k}={v}") for k, v in roots.items()]
    if team:
        params.append(("team", team))
    for flag, on in (("no_vectors", not vectors), ("skip_existing", skip_existing),
                     ("local_roots", local_roots)):
        if on:
            params.append((flag, "true"))
    return upload(settings, "/v1/snapshot", params, path)


def cmd_migrate(args: argparse.Namespace, settings: Settings) -> int:
    from codenav.db import migrations
    from codenav.db.connect import connect

    with connect(_db_settings(settings)) as conn:
        print(f"schema version {migrations.migrate(conn)}")
    return 0


def cmd_mcp(args: argparse.Namespace, settings: Settings) -> int:
    try:
        from codenav_adapter.__main__ import main as adapter_main
    except ImportError:
        raise ConfigError("the codenav adapter is not installed",
                          hint="pip install ./services/adapter") from None
    return adapter_main([])


def client_config(url: str, home: Path, repo: str | None = None) -> str:
    """The MCP client set-up for this machine. It names no URL or token: ``codenav mcp``
    finds the local stack through ``stack.json``, so the pasted configuration keeps working
    after a restart (which rotates the token). Another machine gets the URL and a token."""
    env: dict[str, str] = {}
    if home.resolve() != (Path.home() / ".codenav").resolve():
        env["CODENAV_HOME"] = str(home)
    if repo:
        env["CODENAV_REPO"] = repo
    exe = Path(sys.executable).with_name("codenav")
    command = str(exe) if exe.exists() else "codenav"
    env_flags = "".join(f"-e {k}={shlex.quote(v)} " for k, v in env.items())
    claude = f"claude mcp add codenav {env_flags}-- {shlex.quote(command)} mcp"
    server: dict[str, Any] = {"command": command, "args": ["mcp"]}
    if env:
        server["env"] = env
    config = {"mcpServers": {"codenav": server}}
    return ("Set up your agents (MCP entry and rules, re-runnable): codenav setup "
            "[--all] [--dry-run]\n\n"
            f"Claude Code (this machine; survives restarts):\n  {claude}\n\n"
            f"Other MCP clients (JSON):\n{json.dumps(config, indent=2)}\n\n"
            f"From another machine: set CODENAV_URL={url} and CODENAV_TOKEN (this run's token "
            f"above lasts until the next start; `codenav token create` makes a lasting one).\n"
            f"MCP over HTTP: {url}/mcp (header Authorization: Bearer <token>)")


def _stop_requested(_signum: int, _frame: Any) -> None:
    raise KeyboardInterrupt  # SIGTERM stops the stack like Ctrl-C


def cmd_up(args: argparse.Namespace, settings: Settings) -> int:
    from codenav_cli.stack import Stack

    port = args.port or settings.api_port
    wanted = [str(Path(p).expanduser().resolve()) for p in args.repo or []]
    for path in wanted:
        if not Path(path).is_dir():
            raise ConfigError(f"{path} is not a directory")
    seed = Path(args.seed).expanduser().resolve() if args.seed else None
    if seed is not None:
        from codenav import snapshot
        from codenav_cli import pgseed

        if pgseed.is_physical(seed):  # versions checked before starting
            pgseed.read_manifest(seed).check(seed.name)
        else:
            snapshot.check_versions(snapshot.read_manifest(seed), seed.name)
    stack = Stack(settings, port=port, workers=args.workers, embed_workers=args.embed_workers,
                  repos=wanted, seed=seed)
    signal.signal(signal.SIGTERM, _stop_requested)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even if started ignoring it
    try:
        stack.start()
        os.environ["CODENAV_URL"] = stack.url
        os.environ["CODENAV_TOKEN"] = stack.token
        client_settings = Settings.load()
        names = []
        for repo_path in args.repo or []:
            root = Path(repo_path).expanduser().resolve()
            if not root.is_dir():
                raise ConfigError(f"{repo_path} is not a directory")
            data = _api(client_settings, "POST", "/v1/repos", {"root": str(root)})
            names.append(data["repo"]["name"])
            if data.get("job_id") and not args.no_wait:
                info = wait_for_job(client_settings, data["job_id"], data["repo"]["name"])
                run = _check_done(info, f"indexing {data['repo']['name']}")
                sys.stderr.write(f"indexed {data['repo']['name']}: {run.get('files_total', 0)} "
                                 f"files in {run.get('seconds', '?')}s\n")
                wait_for_graph(client_settings, info, data["repo"]["name"], quiet=False)
        print(f"\ncodenav is running.\n  API:   {stack.url}  (docs: {stack.url}/docs)\n"
              f"  token: {stack.token}\n  state: {stack.home}\n")
        print(client_config(stack.url, stack.home,
                            names[0] if len(names) == 1 else None))
        print("\nPress Ctrl-C to stop every codenav process.", flush=True)
        embedding = [EmbeddingProgress(client_settings, n,
                                       starting=lambda: stack.state("embedder") != "ready")
                     for n in names]

        def show_embedding() -> None:  # the embedding phase, while the stack runs
            for progress in embedding:
                if not progress.done:
                    progress.poll()
                    return

        stack.run(show_embedding)
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C does not cut it short
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        sys.stderr.write("\nstopping codenav...\n")
        took = stack.stop()
        sys.stderr.write(f"codenav stopped in {took:.1f}s\n")
    if stack.fatal:
        raise Unavailable(f"the stack stopped: {stack.fatal}",
                          hint=f"the logs are in {stack.home / 'logs'}")
    return 0


def _command(sub: Any, name: str, help: str, *, repo: bool = False
             ) -> argparse.ArgumentParser:
    """A subcommand with the flags most share: ``--json`` and, with ``repo``, ``--repo``."""
    parser: argparse.ArgumentParser = sub.add_parser(name, help=help)
    if repo:
        parser.add_argument("--repo", help="repository name (default: the only one)")
    parser.add_argument("--json", action="store_true", help="print the structured result")
    return parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="codenav", description="Team-shared code navigation "
                                     "for AI coding agents.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    up = sub.add_parser("up", help="run the whole stack locally (store, queue, api, workers, "
                        "watcher) in the foreground")
    up.add_argument("--repo", action="append", help="repository to register and index "
                    "(repeatable)")
    up.add_argument("--port", type=int, help="API port (default 8765)")
    up.add_argument("--workers", type=int, default=1, help="index worker processes")
    up.add_argument("--embed-workers", type=int, default=1,
                    help="embedding worker processes (their own lane)")
    up.add_argument("--no-wait", action="store_true", help="do not wait for indexing")
    up.add_argument("--seed", metavar="FILE", help="import this snapshot before the first "
                    "index, or start an empty home from this physical seed (--repo PATH "
                    "maps its repository here)")
    up.set_defaults(func=cmd_up)

    idx = sub.add_parser("index", help="register a directory and index it")
    idx.add_argument("path")
    idx.add_argument("--name", help="repository name (default: directory name)")
    idx.add_argument("--no-wait", action="store_true", help="return at once")
    idx.add_argument("--incremental", action="store_true",
                     help="reindex only what changed (always the case; kept for scripts)")
    idx.add_argument("--quiet", action="store_true", help="no progress bar")
    idx.add_argument("--embeddings", action="store_true",
                     help="also wait until every chunk is embedded (semantic search)")
    idx.add_argument("--ref", action="append", metavar="NAME[=REV]",
                     help="also index this branch, tag or commit from the repository's git "
                     "(no checkout; repeatable)")
    idx.add_argument("--follow", action="append", metavar="PATTERN",
                     help="follow these refs as they move (main, 'release/*'; repeatable)")
    idx.add_argument("--keep", type=int, metavar="N",
                     help="keep the last N earlier commits of each followed ref queryable")
    idx.set_defaults(func=cmd_index)

    pub = _command(sub, "publish", help="CI: index this checkout's commit locally and send the "
                         "server only what it lacks, then move REF there (write token)")
    pub.add_argument("path", nargs="?", default=".", help="the checkout (default: .)")
    pub.add_argument("--url", help="the server (default: CODENAV_URL)")
    pub.add_argument("--token", help="a write token (default: CODENAV_TOKEN)")
    pub.add_argument("--repo", required=True, help="the repository's name on the server "
                     "(created at its first publish)")
    pub.add_argument("--ref", required=True, help="the ref to move (main, a branch, a tag)")
    pub.add_argument("--commit", default="HEAD", help="what to publish (default: HEAD)")
    pub.add_argument("--default", action="store_true",
                     help="make REF what queries without ref answer for")
    pub.add_argument("--cache", help="the local store's directory, kept between CI jobs "
                     "(default: ~/.cache/codenav/publish)")
    pub.add_argument("--part-bytes", type=int, default=32 << 20,
                     help="contents per upload request, by size (default 32 MiB)")
    pub.add_argument("--no-wait", action="store_true",
                     help="return once the server has the commit, before the ref moves")
    pub.add_argument("--embed-url", help="an embedder for the job to embed the commit's texts "
                     "with, sending the vectors the server lacks (same model as the server's)")
    pub.set_defaults(func=cmd_publish)

    rf = sub.add_parser("ref", help="refs of a repository: list, add (index from git), rm")
    rfsub = rf.add_subparsers(dest="ref_cmd", metavar="ACTION", required=True)
    _command(rfsub, "list", help="the indexed refs, their commits and kept commits", repo=True)
    rfa = _command(rfsub, "add", help="index refs from the repository's git (write)", repo=True)
    rfa.add_argument("names", nargs="*", metavar="NAME[=REV]")
    rfa.add_argument("--follow", action="append", metavar="PATTERN",
                     help="the refs to follow from now on (replaces the list)")
    rfa.add_argument("--keep", type=int, metavar="N")
    rfa.add_argument("--no-wait", action="store_true")
    rfr = _command(rfsub, "rm", help="drop a ref; what only it used is collected (write)",
                   repo=True)
    rfr.add_argument("name")
    rf.set_defaults(func=cmd_ref)

    for tool in TOOLS.values():
        add_tool_parser(sub, tool)

    sta = _command(sub, "stats", help="token economy: tokens returned vs reading the files "
                         "whole, per tool and day")
    sta.add_argument("--days", type=int, default=7, help="the last N days (default 7)")
    sta.set_defaults(func=cmd_stats)

    tok = sub.add_parser("token", help="manage API tokens (admin)")
    tsub = tok.add_subparsers(dest="token_cmd", metavar="ACTION", required=True)
    tc = _command(tsub, "create", help="create a token (printed once)")
    tc.add_argument("--name", default="cli")
    tc.add_argument("--role", choices=("read", "write", "admin"), default="read",
                    help="read: every query tool; write: also register and reindex; "
                    "admin: also tokens, teams, deleting repositories (default read)")
    tc.add_argument("--team", help="the token's team (default: yours); a new name creates it")
    tc.add_argument("--repos", help="limit the token to these repositories (a,b)")
    tc.add_argument("--expires", help="expiry from now: 12h, 30d, 2w (default: none)")
    _command(tsub, "list", help="list your team's tokens")
    tr = _command(tsub, "revoke", help="revoke a token")
    tr.add_argument("id", type=int)
    tok.set_defaults(func=cmd_token)

    team = sub.add_parser("team", help="teams (admin)")
    teamsub = team.add_subparsers(dest="team_cmd", metavar="ACTION", required=True)
    _command(teamsub, "list", help="list teams")
    team.set_defaults(func=cmd_team)

    rp = sub.add_parser("repo", help="repositories")
    rsub = rp.add_subparsers(dest="repo_cmd", metavar="ACTION", required=True)
    _command(rsub, "list", help="the repositories your token sees")
    rr = _command(rsub, "rm", help="delete a repository and its index (admin)")
    rr.add_argument("name")
    rp.set_defaults(func=cmd_repo)

    au = _command(sub, "audit", help="the audit trail of admin actions (admin)")
    au.add_argument("--limit", type=int, default=100)
    au.set_defaults(func=cmd_audit)

    m = sub.add_parser("mcp", help="run the stdio MCP adapter (for your agent's MCP config)")
    m.set_defaults(func=cmd_mcp)

    sn = sub.add_parser("snapshot", help="export or import a snapshot of the index (admin)")
    snsub = sn.add_subparsers(dest="snapshot_cmd", metavar="ACTION", required=True)
    se = _command(snsub, "export", help="write repositories' index (contents, chunks, "
                          "symbols, graph, vectors) to FILE")
    se.add_argument("file")
    se.add_argument("--repo", action="append", help="repository to export (repeatable; "
                    "default: every one)")
    se.add_argument("--ref", help="the commit or branch the repository is indexed at")
    se.add_argument("--physical", action="store_true",
                    help="copy this machine's stopped local store (CODENAV_HOME) as a seed "
                    "that `codenav up --seed` starts an empty home from in seconds")
    si = _command(snsub, "import", help="load a snapshot into this store (merges by "
                          "content; a repository of the same name is replaced)")
    si.add_argument("file")
    si.add_argument("--root", action="append", metavar="[NAME=]PATH",
                    help="where the snapshot's repository is checked out here (by name, "
                    "or the only one)")
    si.add_argument("--team", help="import into this team (operator only)")
    si.add_argument("--no-vectors", action="store_true",
                    help="leave the vectors out (embedded again here)")
    si.add_argument("--skip-existing", action="store_true",
                    help="import nothing if the store holds one of its repositories (a seed)")
    si.add_argument("--local-roots", action="store_true",
                    help="put each repository under CODENAV_ALLOWED_ROOTS (the directory of "
                    "its name, or the only one)")
    sn.set_defaults(func=cmd_snapshot)

    mg = sub.add_parser("migrate", help="apply database migrations")
    mg.set_defaults(func=cmd_migrate)

    from codenav_cli.setup.cli import add_parser as add_setup_parser
    add_setup_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        settings = Settings.load()
        if args.command not in ("up", "token", "team", "repo", "audit", "migrate", "mcp",
                                "setup", "stats", "snapshot", "publish"):
            endpoint(settings)  # fail early with a clear message when nothing is configured
        return int(args.func(args, settings))
    except CodenavError as exc:
        sys.stderr.write(f"codenav: {exc.message}\n")
        if exc.hint:
            sys.stderr.write(f"  hint: {exc.hint}\n")
        return 1
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # a bug: still one line, with where to look
        if os.environ.get("CODENAV_DEBUG"):
            raise
        sys.stderr.write(f"codenav: unexpected {type(exc).__name__}: {exc}\n"
                         "  hint: rerun with CODENAV_DEBUG=1 for the traceback, and report it\n")
        return 1


if __name__ == "__main__":
    sys.exit(main())
