"""The store: connecting (``connect``), the numbered migrations (``migrations``), and every
SQL statement codenav runs (``queries``)."""
