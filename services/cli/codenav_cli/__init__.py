"""codenav's launcher and command line: the ``codenav`` console script (``cli``), the local
stack that starts and supervises every service as a process (``stack``), the embedded
Postgres and Redis it runs on (``stores``, ``homedir``), and the agent harness writers
(``setup``). It may depend on every service; no service depends on it.
"""
