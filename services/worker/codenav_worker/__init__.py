"""codenav worker: runs index jobs from the queue (RQ)."""
