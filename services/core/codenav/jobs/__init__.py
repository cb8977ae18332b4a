"""Index jobs: enqueueing them (``enqueue``: queues, lanes, coalescing, pending paths), the
jobs themselves (``tasks``: what a worker runs), and coordination between processes
(``coordination``: watcher leases, heartbeats, recovery of a dead worker's job)."""
