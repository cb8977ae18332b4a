"""Every Redis key the jobs and their coordination use, in one place."""

from __future__ import annotations

import re

PENDING = "codenav:pending:{repo_id}"
"""Hash: path -> what happened on disk, for paths not reconciled yet."""
PENDING_SINCE = "codenav:pending-since:{repo_id}"
"""When the oldest change still pending was seen (unix time): the repository's index lag."""
REFS = "codenav:refs:{repo_id}"
"""Hash: ref name -> the revision asked for it ("" for the ref's own commit), for refs
asked for and not indexed yet (``codenav index --ref``)."""
PUBLISHES = "codenav:publish:{repo_id}"
"""Hash: ref name -> the commit CI published for it (gzip JSON: its file list), until the
publish job has built its tree and moved the ref."""
QUEUED = "codenav:queued:{kind}:{repo_id}"
"""The job of this kind waiting for the repository (at most one)."""
RUNNING = "codenav:running:{kind}:{repo_id}"
"""A job that leaves no index run behind (the graph build) is running."""
LEADER = "codenav:watch-leader:{repo_id}"
"""The lease of the one watcher of a repository."""
WATCHER = "codenav:watcher:{repo_id}"
"""What that watcher reports."""
ALIVE = "codenav:watcher-alive:{me}"
"""A sidecar's own heartbeat."""
LANGUAGES = "codenav:languages"
"""Set: the languages index jobs have parsed, whose grammars and queries a forking worker
loads before it forks a job's process."""
JOB_ID = re.compile(r"^(full|paths|graph|embed|refs|publish)-(\d+)-[0-9a-f]+$")
"""Job ids: kind, repository, random part."""
