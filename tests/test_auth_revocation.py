"""Revocation on a real PostgreSQL (the external server, a scratch database migrated to head).

Two RevocationLists on two engines stand for two hub replicas. Waiting is
always "poll until true or a generous deadline", never "sleep then assert".
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import psycopg
import pytest
from conftest import create_scratch_database, drop_database
from sqlalchemy import Engine

from memhub.auth import AuthConfig, KeyRing, RevocationList, TokenVerifier, issue_token
from memhub.db import engine as db_engine
from memhub.db import migrate
from memhub.errors import Unauthenticated

pytestmark = pytest.mark.external_pg

SECRET = b"revocation-test-secret-0123456789abcdef"
DEADLINE_S = 15.0


def eventually(condition: Callable[[], bool], what: str, deadline_s: float = DEADLINE_S) -> None:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if condition():
            return
        time.sleep(0.05)
    pytest.fail(f"not within {deadline_s:g} s: {what}")


@pytest.fixture(scope="module")
def database_url(external_pg_admin_url: str) -> Iterator[str]:
    url = create_scratch_database(external_pg_admin_url)
    engine = db_engine.connect(url, pool_size=2)
    try:
        migrate.upgrade(engine)
    finally:
        engine.dispose()
    yield url
    drop_database(external_pg_admin_url, url)


@pytest.fixture
def engines(database_url: str) -> Iterator[tuple[Engine, Engine]]:
    """One engine per 'replica'."""
    a, b = db_engine.connect(database_url, pool_size=2), db_engine.connect(database_url, pool_size=2)
    yield a, b
    a.dispose()
    b.dispose()


@pytest.fixture
def lists(engines: tuple[Engine, Engine]) -> Iterator[list[RevocationList]]:
    started: list[RevocationList] = []
    yield started
    for revocations in started:
        revocations.stop()


@pytest.fixture
def config(tmp_path: Path) -> AuthConfig:
    secret = tmp_path / "secret"
    secret.write_bytes(SECRET)
    return AuthConfig(hs256_secret_file=secret)


def start(lists: list[RevocationList], revocations: RevocationList) -> RevocationList:
    revocations.start()
    lists.append(revocations)
    return revocations


def verifier_for(config: AuthConfig, revocations: RevocationList) -> TokenVerifier:
    return TokenVerifier(config, KeyRing.from_config(config), revocations.is_revoked)


def refused_as_revoked(verifier: TokenVerifier, token: str, jti: str) -> bool:
    try:
        verifier.verify(token)
    except Unauthenticated as exc:
        assert str(exc) == f"token {jti} was revoked"
        return True
    return False


def test_revocation_on_one_replica_is_refused_by_another(
    engines: tuple[Engine, Engine], lists: list[RevocationList], config: AuthConfig
) -> None:
    a = start(lists, RevocationList(engines[0], refresh_interval_s=0.5))
    b = start(lists, RevocationList(engines[1], refresh_interval_s=0.5))
    issued = issue_token(SECRET, agent_id="worker-1", groups=["team-a"], ttl=timedelta(hours=1))
    verifier_b = verifier_for(config, b)
    assert verifier_b.verify(issued.token).agent_id == "worker-1"

    assert a.revoke(issued.jti, agent_id="worker-1", expires_at=issued.expires_at, revoked_by="admin", reason="laptop lost")
    assert a.is_revoked(issued.jti)  # at once where it was revoked, before any refresh
    eventually(lambda: refused_as_revoked(verifier_b, issued.token, issued.jti), "replica B refuses the revoked token")

    # Revoking again is a no-op that says so; other tokens are unaffected.
    assert not a.revoke(issued.jti, agent_id="worker-1", expires_at=issued.expires_at, revoked_by="admin")
    other = issue_token(SECRET, agent_id="worker-1", ttl=timedelta(hours=1))
    assert verifier_b.verify(other.token).token_id == other.jti


def test_notify_reaches_a_replica_that_polls_rarely_even_after_its_connection_drops(
    engines: tuple[Engine, Engine], lists: list[RevocationList], database_url: str
) -> None:
    a = RevocationList(engines[0], listen=False)  # only revokes; sends NOTIFY
    # Polling every hour: within the deadline only a notification can tell B.
    b = start(lists, RevocationList(engines[1], refresh_interval_s=3600))
    eventually(lambda: b.listening, "B is listening")

    first = issue_token(SECRET, agent_id="w", ttl=timedelta(hours=1))
    a.revoke(first.jti, agent_id="w", expires_at=first.expires_at, revoked_by="admin")
    eventually(lambda: b.is_revoked(first.jti), "B learns of the revocation through NOTIFY")

    # Kill B's LISTEN connection as a Postgres restart would; it must reconnect and keep listening.
    libpq_url = database_url.replace("postgresql+psycopg://", "postgresql://")
    database = libpq_url.rsplit("/", 1)[1]
    with psycopg.connect(libpq_url, autocommit=True) as admin:
        query = "SELECT pid FROM pg_stat_activity WHERE application_name = 'memhub-revocations' AND datname = %s"
        old_pids = {row[0] for row in admin.execute(query, (database,))}
        assert old_pids, "B's listener connection is visible"
        for pid in old_pids:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))

        def reconnected() -> bool:
            pids = {row[0] for row in admin.execute(query, (database,))}
            return bool(pids - old_pids) and b.listening

        eventually(reconnected, "B's listener reconnects")

    second = issue_token(SECRET, agent_id="w", ttl=timedelta(hours=1))
    a.revoke(second.jti, agent_id="w", expires_at=second.expires_at, revoked_by="admin")
    eventually(lambda: b.is_revoked(second.jti), "B learns of a revocation made after the reconnect")


def test_polling_alone_propagates_revocations(engines: tuple[Engine, Engine], lists: list[RevocationList]) -> None:
    a = RevocationList(engines[0], listen=False)
    b = start(lists, RevocationList(engines[1], refresh_interval_s=0.2, listen=False))
    issued = issue_token(SECRET, agent_id="w", ttl=timedelta(hours=1))
    assert not b.is_revoked(issued.jti)
    a.revoke(issued.jti, agent_id="w", expires_at=issued.expires_at, revoked_by="admin")
    eventually(lambda: b.is_revoked(issued.jti), "B's periodic refresh picks up the revocation")


def test_a_new_replica_loads_existing_revocations_on_start(engines: tuple[Engine, Engine], lists: list[RevocationList]) -> None:
    issued = issue_token(SECRET, agent_id="w", ttl=timedelta(hours=1))
    RevocationList(engines[0], listen=False).revoke(issued.jti, agent_id="w", expires_at=issued.expires_at, revoked_by="admin")
    late = start(lists, RevocationList(engines[1], refresh_interval_s=3600, listen=False))
    assert late.is_revoked(issued.jti)  # start() refreshes before returning


def test_list_shows_newest_first_and_purge_drops_long_expired_rows(engines: tuple[Engine, Engine]) -> None:
    revocations = RevocationList(engines[0], listen=False)
    now = datetime.now(timezone.utc)
    long_gone = issue_token(SECRET, agent_id="old", ttl=timedelta(hours=1), now=now - timedelta(days=2))
    live = issue_token(SECRET, agent_id="new", ttl=timedelta(hours=1))
    revocations.revoke(long_gone.jti, agent_id="old", expires_at=long_gone.expires_at, revoked_by="admin", reason="r1")
    revocations.revoke(live.jti, agent_id="new", expires_at=live.expires_at, revoked_by="ops", reason="r2")

    listed = {r.jti: r for r in revocations.list(1000)}
    assert listed[live.jti].agent_id == "new" and listed[live.jti].revoked_by == "ops" and listed[live.jti].reason == "r2"
    assert listed[live.jti].expires_at == live.expires_at
    newest = revocations.list(1)
    assert len(newest) == 1 and newest[0].revoked_at >= listed[long_gone.jti].revoked_at

    # A token that expired long ago is not kept in memory by a refresh, and its row is purged.
    revocations.refresh()
    assert revocations.is_revoked(live.jti) and not revocations.is_revoked(long_gone.jti)
    assert revocations.purge_expired() >= 1
    remaining = {r.jti for r in revocations.list(1000)}
    assert live.jti in remaining and long_gone.jti not in remaining


def test_recently_expired_revocations_stay_in_force_through_the_leeway(engines: tuple[Engine, Engine]) -> None:
    # The verifier accepts a token up to its leeway past exp; the revocation must outlive it.
    revocations = RevocationList(engines[0], listen=False)
    just_expired = issue_token(
        SECRET, agent_id="w", ttl=timedelta(minutes=1), now=datetime.now(timezone.utc) - timedelta(seconds=70)
    )
    revocations.revoke(just_expired.jti, agent_id="w", expires_at=just_expired.expires_at, revoked_by="admin")
    fresh = RevocationList(engines[1], listen=False)
    fresh.refresh()
    assert fresh.is_revoked(just_expired.jti)
    fresh.purge_expired()
    assert just_expired.jti in {r.jti for r in fresh.list(1000)}


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"jti": ""}, "jti"),
        ({"jti": "a b"}, "jti"),
        ({"jti": "x" * 129}, "jti"),
        ({"expires_at": datetime(2030, 1, 1)}, "expires_at"),
        ({"revoked_by": ""}, "revoked_by"),
        ({"agent_id": "a" * 256}, "agent_id"),
        ({"reason": "r" * 2001}, "reason"),
    ],
)
def test_revoke_validates_its_arguments(engines: tuple[Engine, Engine], kwargs: dict, field: str) -> None:
    args = {"jti": "abc", "agent_id": "w", "expires_at": datetime.now(timezone.utc), "revoked_by": "admin", **kwargs}
    jti = args.pop("jti")
    with pytest.raises(ValueError, match=f"^{field}:"):
        RevocationList(engines[0], listen=False).revoke(jti, **args)


def test_list_limit_is_bounded(engines: tuple[Engine, Engine]) -> None:
    for bad in (0, 1001, True):
        with pytest.raises(ValueError, match="^limit:"):
            RevocationList(engines[0], listen=False).list(bad)


def test_start_fails_when_the_database_is_unreachable() -> None:
    # Never serve with an unknown revocation list: start() refreshes synchronously and raises.
    from sqlalchemy import create_engine
    from sqlalchemy.exc import OperationalError

    dead = create_engine("postgresql+psycopg://postgres@127.0.0.1:1/none", connect_args={"connect_timeout": 2})
    with pytest.raises(OperationalError):
        RevocationList(dead, listen=False).start()
    dead.dispose()
