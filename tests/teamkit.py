"""Two teams on one server, for the access-control tests: team ``alpha`` with the
repository ``alpha-ledger``, team ``beta`` with ``beta-shop``, read, write and admin tokens
in each, indexed for real (graph included) in their own database, and the API served by a
real uvicorn server on a loopback port."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
import uvicorn
from psycopg import sql

from codenav import repos
from codenav.auth import create_token
from codenav.config import Settings
from codenav.index import reconcile
from codenav_cli.stores import EmbeddedPostgres, free_port

ALPHA_FILES = {
    "ledger_alpha/__init__.py": "from ledger_alpha.core import AlphaLedgerReconciler\n",
    "ledger_alpha/core.py": '''"""Reconciles the alpha ledger."""

from ledger_alpha.rates import alpha_exchange_rate


class AlphaLedgerBase:
    def alpha_post_entry(self, amount):
        return amount


class AlphaLedgerReconciler(AlphaLedgerBase):
    """Settles alpha invoices against the ledger."""

    def alpha_settle_invoice(self, invoice_id, amount):
        rate = alpha_exchange_rate("EUR")
        return self.alpha_post_entry(amount * rate)
''',
    "ledger_alpha/rates.py": '''def alpha_exchange_rate(currency):
    """The alpha desk's rate for a currency."""
    return {"EUR": 1.1}.get(currency, 1.0)
''',
    "ledger_alpha/report.ts": '''export interface AlphaQuarterReport { total: number }
export class AlphaQuarterSummary implements AlphaQuarterReport {
  total = 0
  alphaAddLine(amount: number): void { this.total += amount }
}
''',
    "docs/alpha_runbook.md": "# Alpha ledger runbook\n\nReconcile alpha invoices nightly.\n",
}
ALPHA_FILES.update({f"ledger_alpha/alpha_batch_{i:02d}.py":
                    f"def alpha_batch_job_{i:02d}(ledger):\n    return ledger.alpha_settle_invoice"
                    f"({i}, {i * 10})\n" for i in range(18)})
ALPHA_MARKERS = ("ledger_alpha", "AlphaLedger", "alpha_settle", "alpha_exchange", "AlphaQuarter",
                 "alpha_batch", "alpha_runbook", "alphaAddLine", "alpha_post_entry",
                 "team-alpha-root")
"""Strings only team alpha's data holds: none may reach a beta token."""
ALPHA_FILE_COUNT = len(ALPHA_FILES)  # 23

BETA_FILES = {
    "shop/cart.py": '''class ShopCart:
    """A beta shop cart."""

    def beta_checkout(self, total):
        return round(total, 2)
''',
    "shop/invoice.py": '''from shop.cart import ShopCart


def beta_invoice_total(items):
    """Totals an invoice for the beta shop."""
    return ShopCart().beta_checkout(sum(items))
''',
    "web/cart_view.ts": "export function betaRenderCart(items: string[]): string {\n"
                        "  return items.join(', ')\n}\n",
    "README.md": "# Beta shop\n\nReconcile invoices and settle the ledger of the shop.\n",
}


@dataclass
class Teams:
    url: str
    settings: Settings
    database_url: str
    allowed: Path
    outside: Path
    alpha_root: Path
    beta_root: Path
    alpha_id: int
    beta_id: int
    tokens: dict[str, str] = field(default_factory=dict)
    """``alpha-read``, ``beta-admin``... -> bearer token."""
    token_ids: dict[str, int] = field(default_factory=dict)

    def headers(self, who: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tokens[who]}"}


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@contextlib.contextmanager
def database(pg: EmbeddedPostgres, template: str) -> Iterator[str]:
    name = f"t_{uuid.uuid4().hex[:12]}"
    base = pg.url.rsplit("/", 1)[0]
    with psycopg.connect(base + "/postgres", autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
            sql.Identifier(name), sql.Identifier(template)))
    try:
        yield f"{base}/{name}"
    finally:
        with psycopg.connect(base + "/postgres", autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                sql.Identifier(name)))


@contextlib.contextmanager
def serve(settings: Settings) -> Iterator[str]:
    """The API on a real uvicorn server (its own thread), until the block ends."""
    from codenav_api.app import create_app

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(settings), host="127.0.0.1", port=port,
                                           log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started, "the API did not start"
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(60)
        assert not thread.is_alive(), "the API did not stop"  # no thread outlives a test


@contextlib.contextmanager
def two_teams(pg: EmbeddedPostgres, template: str, redis_url: str) -> Iterator[Teams]:
    base = Path(tempfile.mkdtemp(prefix="codenav-teams-"))
    allowed = base / "allowed"
    outside = base / "outside"
    outside.mkdir(parents=True)
    alpha_root = write_tree(allowed / "team-alpha-root", ALPHA_FILES)
    beta_root = write_tree(allowed / "team-beta-root", BETA_FILES)
    with database(pg, template) as url:
        env = {"CODENAV_DATABASE_URL": url, "CODENAV_REDIS_URL": redis_url,
               "CODENAV_HOME": str(base / "home"), "CODENAV_PARSE_PROCESSES": "1",
               "CODENAV_ALLOWED_ROOTS": str(allowed),
               # the isolation matrix sends a thousand queries per token back to back;
               # the limit has its own tests (tests/api/test_rate_limit.py)
               "CODENAV_RATE_LIMIT_PER_S": "0"}
        settings = Settings.load(env=env, dotenv=Path("/nonexistent"))
        with psycopg.connect(url, autocommit=True) as conn:
            ids = {}
            tokens, token_ids = {}, {}
            for team in ("alpha", "beta"):
                for role in ("read", "write", "admin"):
                    token, token_id = create_token(conn, f"{team}-{role}", role, team)
                    tokens[f"{team}-{role}"], token_ids[f"{team}-{role}"] = token, token_id
            for team, name, root in (("alpha", "alpha-ledger", alpha_root),
                                     ("beta", "beta-shop", beta_root)):
                repo = repos.register(conn, str(root), name, repos.team_id(conn, team))
                reconcile.reconcile(settings, repo.id)
                ids[team] = repo.id
            token, token_id = create_token(conn, "alpha-limited", "read", "alpha",
                                           ["alpha-ledger"])
            tokens["alpha-limited"], token_ids["alpha-limited"] = token, token_id
        with serve(settings) as api:
            yield Teams(api, settings, url, allowed, outside, alpha_root, beta_root,
                        ids["alpha"], ids["beta"], tokens, token_ids)
    shutil.rmtree(base, ignore_errors=True)
