"""The throwaway cluster the tests, the benchmarks and `make postgres` start."""

from __future__ import annotations

import psycopg
from pg_cluster import ThrowawayCluster


def test_each_test_gets_an_empty_database_of_its_own(pg_cluster: ThrowawayCluster) -> None:
    first, second = pg_cluster.new_database(), pg_cluster.new_database()
    assert first != second
    with psycopg.connect(first, autocommit=True) as conn:
        conn.execute("CREATE TABLE mine (x int)")
    with psycopg.connect(second, autocommit=True) as conn:
        found = conn.execute("SELECT count(*) FROM pg_tables WHERE tablename = 'mine'").fetchone()
    assert found == (0,)
