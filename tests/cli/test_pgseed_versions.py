"""Which physical seeds ``codenav up --seed`` starts from: the versions its manifest names,
checked against this codenav and this machine's embedded Postgres before anything starts."""

from __future__ import annotations

import pytest

from codenav.snapshot import SnapshotError
from codenav.versions import CHUNKER_VERSION, SCHEMA_ROWS_SINCE, SCHEMA_VERSION
from codenav_cli import pgseed


def _manifest(**changes: object) -> pgseed.Manifest:
    local = pgseed.local_versions()
    data: dict[str, object] = {
        "format": pgseed.FORMAT, "format_version": pgseed.FORMAT_VERSION,
        "schema_version": SCHEMA_VERSION, "chunker_version": CHUNKER_VERSION,
        "postgres": local["postgres"], "pgvector": local["pgvector"]}
    return pgseed.Manifest({**data, **changes})


def test_a_seed_at_an_older_schema_with_the_same_rows_starts_and_is_migrated_on_start() -> None:
    """Schema 20 added an index, no row: a store seeded at 19 is migrated when the stack
    starts, so a seed image built before the upgrade still starts a machine."""
    for schema in range(SCHEMA_ROWS_SINCE, SCHEMA_VERSION + 1):
        _manifest(schema_version=schema).check("seed.pgseed")


@pytest.mark.parametrize("schema", [SCHEMA_ROWS_SINCE - 1, SCHEMA_VERSION + 1, None])
def test_a_seed_at_another_schema_is_refused_naming_both_versions(schema: object) -> None:
    with pytest.raises(SnapshotError) as refused:
        _manifest(schema_version=schema).check("seed.pgseed")
    assert f"schema version {schema}" in refused.value.message
    assert f"schema version {SCHEMA_VERSION}" in refused.value.message


def test_a_seed_of_another_postgres_or_chunker_is_refused() -> None:
    for field, what in (("postgres", "Postgres"), ("chunker_version", "chunker version")):
        with pytest.raises(SnapshotError) as refused:
            _manifest(**{field: "999"}).check("seed.pgseed")
        assert f"{what} 999" in refused.value.message
