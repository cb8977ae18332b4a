"""Building the index from disk: walking a repository (``walk``, ``ignore``), reading and
hashing files (``blob``), redacting secrets (``redact``), parsing and storing batches in
parser processes (``ingest``), git facts (``gitinfo``) and the one indexing job,
``reconcile``, which compares disk with the index and converges."""
