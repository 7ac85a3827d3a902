"""Fixtures shared by tests/ and features/: one real PostgreSQL server per test session.

``postgres_server`` starts a throwaway server (see tests/postgres_server.py) the first time a
test asks for it and stops it at the end; when none can be had, those tests skip, saying why.
``session_store`` is parametrised over every backend, so a test that takes it runs against
files and PostgreSQL alike (the conformance suite).

The suite runs in worker processes (pytest-xdist, ``-n auto``), so which tests share a process,
and in what order, differs from run to run: anything one test leaves configured in the process
is undone after it, and nothing asks the wall clock whether a property holds.
"""

from __future__ import annotations

import contextlib
import itertools
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from tests.postgres_server import PgBouncer, PostgresServer, pgbouncer_unavailable, unavailable

_databases = itertools.count()

# Hypothesis times input generation and each example against the wall clock; on a loaded
# machine (two workers on two cores) a strategy that is fast alone trips the health check or a
# deadline. What a property proves does not depend on the clock. Tests that pass their own
# settings keep them; these are only the defaults.
settings.register_profile("suite", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("suite")


@pytest.fixture(autouse=True)
def _structlog_as_found() -> Iterator[None]:
    """Undo a structlog configuration a test made: ``capture_logs`` leaves structlog
    "configured" with its stdout-printing defaults, and the library logs through structlog once
    it is configured, so a later test's captured stdout would carry debug lines."""
    yield
    structlog = sys.modules.get("structlog")
    if structlog is not None and structlog.is_configured():
        structlog.reset_defaults()


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    reason = unavailable()
    if reason is not None:
        pytest.skip(f"no PostgreSQL for the PostgreSQL session store tests: {reason}")
    server = PostgresServer()
    try:
        server.start()
    except Exception as exc:  # a server that will not start is an environment problem
        server.stop()
        pytest.skip(f"could not start a PostgreSQL server: {exc}")
    yield server
    server.stop()


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> str:
    """The URL of a fresh, empty database on the test server."""
    import psycopg

    name = f"test_{next(_databases)}"
    with psycopg.connect(postgres_server.url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")  # a fixed, generated identifier
    return postgres_server.url.rsplit("/", 1)[0] + f"/{name}"


@pytest.fixture(scope="session")
def pgbouncer(postgres_server: PostgresServer) -> Iterator[PgBouncer]:
    """PgBouncer in transaction pooling mode in front of the test server (started once)."""
    reason = pgbouncer_unavailable()
    if reason is not None:
        pytest.skip(f"no PgBouncer for the transaction-pooling tests: {reason}")
    bouncer = PgBouncer(postgres_server)
    try:
        bouncer.start()
    except Exception as exc:  # a pooler that will not start is an environment problem
        bouncer.stop()
        pytest.skip(f"could not start PgBouncer: {exc}")
    yield bouncer
    bouncer.stop()


@pytest.fixture
def pgbouncer_url(pgbouncer: PgBouncer, postgres_url: str) -> str:
    """A fresh, empty database on the test server, reached through PgBouncer."""
    return pgbouncer.url_for(postgres_url)


@pytest.fixture(params=["file", "postgres", "pgbouncer"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A store URL for each backend: a directory, a fresh PostgreSQL database, and one
    reached through PgBouncer in transaction pooling mode."""
    if request.param == "file":
        return str(tmp_path / "sessions")
    if request.param == "pgbouncer":
        return str(request.getfixturevalue("pgbouncer_url"))
    return str(request.getfixturevalue("postgres_url"))


@pytest.fixture
def session_store(store_url: str) -> Iterator[Any]:
    from compaction.sessions import SessionStore

    store = SessionStore.from_url(store_url)
    yield store
    with contextlib.suppress(Exception):
        store.close()
