"""The role each action needs, and the one check of it.

``REQUIRED`` maps every action a caller can ask for (each tool, route and CLI command goes
through one) to the lowest role that may: the tools' roles come from their modules in the
registry (``codenav.tools``), the other routes' are listed here. REST, MCP and the CLI's
direct database mode all call ``authorize``.
"""

from __future__ import annotations

from codenav import tools
from codenav.access import DEFAULT_TEAM, ROLES, Caller
from codenav.errors import Forbidden

REQUIRED: dict[str, str] = {
    **tools.roles(),  # each tool declares its role in its module
    "repo.list": "read",
    "job.status": "read",
    "stats": "read",
    "overlay": "read",  # a developer's own edits, seen by their token alone
    "metrics": "admin",
    "repo.register": "write",
    "ref.index": "write",
    "ref.delete": "write",
    "publish": "write",
    "repo.delete": "admin",
    "token.create": "admin",
    "token.list": "admin",
    "token.revoke": "admin",
    "team.list": "admin",
    "audit.list": "admin",
    "snapshot.export": "admin",
    "snapshot.import": "admin",
}
"""The role each action needs, for REST, MCP and the CLI alike."""


def authorize(caller: Caller, action: str) -> None:
    """Raise ``Forbidden`` unless the caller's role allows ``action``."""
    needed = REQUIRED[action]
    if ROLES.index(caller.role) < ROLES.index(needed):
        article = "an" if needed == "admin" else "a"
        raise Forbidden(f"{action} needs {article} {needed} token; this one is {caller.role}",
                        hint=f"ask an admin: codenav token create --role {needed} "
                        f"--team {caller.team or DEFAULT_TEAM}")
