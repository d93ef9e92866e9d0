"""MilvusIndex against real Milvus Lite: model record, search channels, every filter, writes, failures.

One milvus-lite data directory serves the module (startup is the slow part);
tests that mutate data use their own collection. Filter tests compare the
returned id set with the rows a plain-Python predicate selects, and each
case is built so that the unfiltered search returns more.
"""

from __future__ import annotations

import math
import random
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest

from memhub.index import IndexedMemory, IndexFilter, IndexModelMismatch, IndexUnavailable, MilvusIndex, schema
from memhub.index.backend import Backend, DenseIndex, detect
from memhub.index.filters import build_filter, encode_tag, namespace_key, quote, tag_keys
from memhub.index.lite_server import LiteServer
from memhub.index.rows import to_row

DIM = 8
MODEL = "test-model-v1"
NOW = 1_750_000_000_000
DAY = 86_400_000


def unit(seed: int) -> list[float]:
    """A deterministic random unit vector."""
    rng = random.Random(seed)
    v = [rng.gauss(0, 1) for _ in range(DIM)]
    n = math.sqrt(sum(x * x for x in v))
    return [x / n for x in v]


def mem(
    content: str,
    *,
    namespace: str = "t/a",
    kind: str = "semantic",
    type: str = "fact",
    tags: tuple[str, ...] = (),
    occurred: int = NOW,
    expires: int = 0,
    vector: list[float] | None = None,
    id: str | None = None,
) -> IndexedMemory:
    mid = id or str(uuid.uuid4())
    return IndexedMemory(
        id=mid,
        namespace=namespace,
        kind=kind,
        type=type,
        content=content,
        tags=tags,
        occurred_at_ms=occurred,
        created_at_ms=occurred,
        expires_at_ms=expires,
        vector=vector or unit(hash(mid) & 0xFFFF),
    )


# A fixed corpus for the filter tests: namespaces (one with a quote and a
# backslash), kinds, types, awkward tags, times and expiries.
CORPUS = [
    mem("alpha fact", namespace="t/a", kind="semantic", type="fact", tags=("urgent",), occurred=NOW - 10 * DAY),
    mem("alpha event", namespace="t/a", kind="episodic", type="event", tags=("billing", "urgent"), occurred=NOW - 5 * DAY),
    mem("alpha rule", namespace="t/a", kind="procedural", type="rule", tags=("50%_off",), occurred=NOW - 1 * DAY),
    mem("beta fact", namespace="t/b", kind="semantic", type="fact", tags=("50a_off",), occurred=NOW - 3 * DAY),
    mem("beta pref", namespace="t/b", kind="semantic", type="preference", tags=("a", "b"), occurred=NOW),
    mem("beta lesson", namespace="t/b", kind="episodic", type="lesson", tags=("a|b",), occurred=NOW + 1 * DAY),
    mem("gamma quoted", namespace='t/q"uote\\x', kind="semantic", type="fact", tags=('say "hi"',), occurred=NOW),
    mem("gamma unicode", namespace="t/c", kind="semantic", type="fact", tags=("日本", "o'brien"), occurred=NOW),
    mem("expired", namespace="t/c", kind="semantic", type="fact", expires=NOW - DAY, occurred=NOW),
    mem("expires exactly now", namespace="t/c", kind="semantic", type="fact", expires=NOW, occurred=NOW),
    mem("expires later", namespace="t/c", kind="semantic", type="fact", expires=NOW + DAY, occurred=NOW),
]
ALL_NS = tuple(sorted({m.namespace for m in CORPUS}))


def _port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module", params=["embedded", "served"])
def uri(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Milvus Lite URI: an embedded data file, or one served over TCP by its own process."""
    folder = tmp_path_factory.mktemp(f"milvus-{request.param}")
    if request.param == "embedded":
        yield str(folder / "index.db")
        return
    server = LiteServer(folder / "served.db", address=f"127.0.0.1:{free_port()}")
    server.start()
    try:
        yield server.uri
    finally:
        server.stop()


@pytest.fixture(scope="module")
def corpus_index(uri: str) -> Iterator[MilvusIndex]:
    index = MilvusIndex(uri, collection="corpus", model_id=MODEL, dimension=DIM)
    index.ensure_collection()
    index.upsert(CORPUS)
    yield index
    index.close()


@pytest.fixture
def fresh_index(uri: str) -> Iterator[MilvusIndex]:
    """An empty collection of its own, for tests that write."""
    index = MilvusIndex(uri, collection=f"c_{uuid.uuid4().hex[:12]}", model_id=MODEL, dimension=DIM)
    index.ensure_collection()
    yield index
    index.close()


def ids_where(pred: Callable[[IndexedMemory], bool]) -> set[str]:
    return {m.id for m in CORPUS if pred(m)}


def dense_ids(index: MilvusIndex, flt: IndexFilter) -> set[str]:
    return {i for i, _ in index.search_dense(unit(1), flt, 100)}


# -- model record -----------------------------------------------------------------


def test_create_records_model_and_reopen_with_same_model(uri: str) -> None:
    name = f"m_{uuid.uuid4().hex[:8]}"
    first = MilvusIndex(uri, collection=name, model_id=MODEL, dimension=DIM)
    assert first.recorded_model() is None
    first.ensure_collection()
    assert first.recorded_model() == (MODEL, DIM)
    first.close()

    again = MilvusIndex(uri, collection=name, model_id=MODEL, dimension=DIM)
    again.ensure_collection()  # no error
    assert again.recorded_model() == (MODEL, DIM)
    again.close()


@pytest.mark.parametrize(("model", "dim"), [("other-model", DIM), (MODEL, 16)])
def test_reopen_with_other_model_or_dimension_is_refused(uri: str, model: str, dim: int) -> None:
    name = f"m_{uuid.uuid4().hex[:8]}"
    MilvusIndex(uri, collection=name, model_id=MODEL, dimension=DIM).ensure_collection()
    other = MilvusIndex(uri, collection=name, model_id=model, dimension=dim)
    with pytest.raises(IndexModelMismatch) as caught:
        other.ensure_collection()
    msg = str(caught.value)
    assert "memhub reindex" in msg
    assert MODEL in msg and model in msg and str(dim) in msg
    assert caught.value.recorded == (MODEL, DIM)
    assert caught.value.expected == (model, dim)


def test_other_analyzer_is_refused(uri: str) -> None:
    name = f"m_{uuid.uuid4().hex[:8]}"
    MilvusIndex(uri, collection=name, model_id=MODEL, dimension=DIM).ensure_collection()
    other = MilvusIndex(uri, collection=name, model_id=MODEL, dimension=DIM, analyzer={"tokenizer": "standard"})
    with pytest.raises(IndexModelMismatch, match="memhub reindex"):
        other.ensure_collection()


def test_record_survives_a_new_process(tmp_path: Path) -> None:
    """What one process records, another reads back; close() stops the embedded server and frees the file for it."""
    uri = str(tmp_path / "proc.db")
    first = MilvusIndex(uri, model_id=MODEL, dimension=DIM)
    first.ensure_collection()
    first.upsert([mem("written by the parent")])
    first.close()  # must release the data file's lock, or the child cannot open it
    script = (
        "from memhub.index import MilvusIndex\n"
        f"i = MilvusIndex({uri!r}, model_id={MODEL!r}, dimension={DIM})\n"
        "i.ensure_collection()\n"
        "print(i.recorded_model(), i.count())\n"
        "i.close()\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script],
        check=True,
        capture_output=True,
        text=True,
        cwd=Path(__file__).parent.parent,
        timeout=120,
    )
    assert out.stdout.strip() == f"('{MODEL}', {DIM}) 1"
    with pytest.raises(IndexModelMismatch, match="memhub reindex"):
        other = MilvusIndex(uri, model_id="another", dimension=DIM)
        try:
            other.ensure_collection()
        finally:
            other.close()


def test_half_created_collection_gets_its_indexes(uri: str) -> None:
    """A create interrupted after the collection but before its indexes is finished on the next start."""
    name = f"m_{uuid.uuid4().hex[:8]}"
    index = MilvusIndex(uri, collection=name, model_id=MODEL, dimension=DIM)
    analyzer = schema.DEFAULT_ANALYZER
    lite = index.backend
    index._client.create_collection(  # noqa: SLF001 - simulating the interrupted create
        name, schema=schema.build_schema(DIM, analyzer, schema.record(MODEL, DIM, analyzer, lite), lite)
    )
    index.ensure_collection()
    assert set(index._client.list_indexes(name)) == {schema.DENSE_CODES, schema.SPARSE}  # noqa: SLF001
    row = mem("repaired collection works")
    index.upsert([row])
    assert index.search_keyword("repaired", IndexFilter(namespaces=("t/a",)), 5)[0][0] == row.id
    assert index.search_dense(row.vector, IndexFilter(namespaces=("t/a",)), 5)[0][0] == row.id
    index.close()


# -- search channels --------------------------------------------------------------


def test_dense_returns_the_nearest_neighbour(fresh_index: MilvusIndex) -> None:
    rows = [mem(f"row {i}", vector=unit(100 + i)) for i in range(20)]
    fresh_index.upsert(rows)
    target = rows[7]
    near = [x + 0.05 * y for x, y in zip(target.vector, unit(999), strict=True)]
    hits = fresh_index.search_dense(near, IndexFilter(namespaces=("t/a",)), 5)
    assert hits[0][0] == target.id
    assert [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
    assert 0.9 < hits[0][1] <= 1.0 + 1e-6  # cosine similarity


def test_bm25_finds_exact_tokens_that_dense_misses(fresh_index: MilvusIndex) -> None:
    query_vec = unit(5)
    far = [-x for x in query_vec]  # the rows BM25 must find point away from the query
    err = mem("deploy failed with ERR-4312 on node seven", vector=far)
    ver = mem("upgraded the gateway to v2.7.1 last night", vector=far)
    distractors = [
        mem("deploy failed with ERR-4313 on node eight", vector=query_vec),
        mem("upgraded the gateway to v2.7.2 this morning", vector=query_vec),
    ] + [mem(f"unrelated note number {i}", vector=unit(200 + i)) for i in range(10)]
    fresh_index.upsert([err, ver, *distractors])
    flt = IndexFilter(namespaces=("t/a",))

    dense = [i for i, _ in fresh_index.search_dense(query_vec, flt, 3)]
    assert err.id not in dense and ver.id not in dense

    hits = fresh_index.search_keyword("ERR-4312", flt, 3)
    assert hits[0][0] == err.id
    assert hits[0][1] > 0  # higher is better on both backends
    assert fresh_index.search_keyword("v2.7.1", flt, 3)[0][0] == ver.id


def test_keyword_search_ignores_blank_text(corpus_index: MilvusIndex) -> None:
    assert corpus_index.search_keyword("   ", IndexFilter(namespaces=ALL_NS), 10) == []


def test_english_stop_words_do_not_match(fresh_index: MilvusIndex) -> None:
    fresh_index.upsert([mem("the cat sat on the mat")])
    assert fresh_index.search_keyword("the", IndexFilter(namespaces=("t/a",)), 5) == []
    assert len(fresh_index.search_keyword("cat", IndexFilter(namespaces=("t/a",)), 5)) == 1


# -- filters ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flt", "pred"),
    [
        pytest.param(IndexFilter(namespaces=("t/a",)), lambda m: m.namespace == "t/a", id="one-namespace"),
        pytest.param(IndexFilter(namespaces=("t/a", "t/b")), lambda m: m.namespace in ("t/a", "t/b"), id="namespace-set"),
        pytest.param(IndexFilter(namespaces=('t/q"uote\\x',)), lambda m: m.namespace == 't/q"uote\\x', id="namespace-with-quote"),
        pytest.param(IndexFilter(namespaces=ALL_NS, kinds=("episodic",)), lambda m: m.kind == "episodic", id="kinds"),
        pytest.param(IndexFilter(namespaces=ALL_NS, types=("fact", "rule")), lambda m: m.type in ("fact", "rule"), id="types"),
        pytest.param(
            IndexFilter(namespaces=ALL_NS, tags_any=("urgent", "日本")),
            lambda m: bool({"urgent", "日本"} & set(m.tags)),
            id="tags-any",
        ),
        pytest.param(
            IndexFilter(namespaces=ALL_NS, tags_any=("50%_off",)), lambda m: "50%_off" in m.tags, id="tag-wildcards-literal"
        ),
        pytest.param(IndexFilter(namespaces=ALL_NS, tags_any=("a|b",)), lambda m: "a|b" in m.tags, id="tag-with-separator"),
        pytest.param(IndexFilter(namespaces=ALL_NS, tags_any=("a",)), lambda m: "a" in m.tags, id="tag-not-a-substring"),
        pytest.param(
            IndexFilter(namespaces=ALL_NS, tags_any=('say "hi"', "o'brien")),
            lambda m: bool({'say "hi"', "o'brien"} & set(m.tags)),
            id="tags-with-quotes",
        ),
        pytest.param(
            IndexFilter(namespaces=ALL_NS, occurred_from_ms=NOW - 5 * DAY, occurred_to_ms=NOW),
            lambda m: NOW - 5 * DAY <= m.occurred_at_ms < NOW,
            id="time-range-half-open",
        ),
        pytest.param(
            IndexFilter(namespaces=ALL_NS, now_ms=NOW),
            lambda m: m.expires_at_ms == 0 or m.expires_at_ms > NOW,
            id="expiry",
        ),
        pytest.param(
            IndexFilter(
                namespaces=("t/a", "t/b"),
                kinds=("semantic",),
                types=("fact", "preference"),
                tags_any=("a", "50a_off"),
                now_ms=NOW,
            ),
            lambda m: (
                m.namespace in ("t/a", "t/b")
                and m.kind == "semantic"
                and m.type in ("fact", "preference")
                and bool({"a", "50a_off"} & set(m.tags))
            ),
            id="combined",
        ),
    ],
)
def test_filter_excludes_what_it_should(
    corpus_index: MilvusIndex, flt: IndexFilter, pred: Callable[[IndexedMemory], bool]
) -> None:
    expected = ids_where(pred)
    everything = dense_ids(corpus_index, IndexFilter(namespaces=ALL_NS))
    assert everything == {m.id for m in CORPUS}
    assert expected and expected < everything, "the case must exclude something and keep something"
    assert dense_ids(corpus_index, flt) == expected
    # The keyword channel shares the filter: every corpus row has a distinct first word.
    kw = {i for q in ("alpha", "beta", "gamma", "expired", "expires") for i, _ in corpus_index.search_keyword(q, flt, 100)}
    assert kw == expected


def test_injection_attempts_match_nothing(corpus_index: MilvusIndex) -> None:
    for evil in ('t/a" or namespace != "', "t/a\\", 't/a") or (1 == 1', "t/a' or '1'=='1"):
        assert dense_ids(corpus_index, IndexFilter(namespaces=(evil,))) == set()
        assert dense_ids(corpus_index, IndexFilter(namespaces=ALL_NS, kinds=(evil,))) == set()
        assert dense_ids(corpus_index, IndexFilter(namespaces=ALL_NS, tags_any=(evil,))) == set()


def test_namespace_keys_are_stable_and_filter_like_the_names(corpus_index: MilvusIndex) -> None:
    # Stored rows carry these keys: a change to the function would make every existing Lite index answer nothing.
    assert namespace_key("t/a") == 2876577667703665397
    assert namespace_key("bench/scale/ns00") == 5577096760559107103
    assert 0 <= namespace_key("\u4e2d\u6587/x") < 2**63
    keyed = build_filter(IndexFilter(namespaces=("t/b", "t/a")), namespace_keys=True)
    assert keyed == f"namespace_key in [{', '.join(str(k) for k in sorted(map(namespace_key, ('t/a', 't/b'))))}]"
    with pytest.raises(ValueError):
        build_filter(IndexFilter(namespaces=("",)), namespace_keys=True)
    if corpus_index.backend.namespace_keys:  # Lite: what the searches ran above filtered on the keys
        for chosen in (("t/a",), ("t/b", "t/c"), ALL_NS):
            assert dense_ids(corpus_index, IndexFilter(namespaces=chosen)) == ids_where(lambda m: m.namespace in chosen)


def test_filter_validation() -> None:
    with pytest.raises(ValueError):
        build_filter(IndexFilter(namespaces=()))
    with pytest.raises(ValueError):
        build_filter(IndexFilter(namespaces=("t/a",), now_ms=True))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not a string"):
        build_filter(IndexFilter(namespaces="t/a"))  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        quote("line\x00break")
    assert quote('a"b\\c') == '"a\\"b\\\\c"'
    assert encode_tag("50%_off") == "50~25~5Foff"
    assert tag_keys(["b", "a", "a"]) == "|a|b|" and tag_keys([]) == "|"


# -- writes -----------------------------------------------------------------------


def test_delete_removes(fresh_index: MilvusIndex) -> None:
    rows = [mem(f"keep or drop {i}") for i in range(4)]
    fresh_index.upsert(rows)
    fresh_index.delete([rows[0].id, rows[1].id, "no-such-id"])
    flt = IndexFilter(namespaces=("t/a",))
    assert dense_ids(fresh_index, flt) == {rows[2].id, rows[3].id}
    assert {i for i, _ in fresh_index.search_keyword("drop", flt, 10)} == {rows[2].id, rows[3].id}
    assert fresh_index.count() == 2


def test_delete_with_a_quote_in_the_id_deletes_only_that_id(fresh_index: MilvusIndex) -> None:
    rows = [mem(f"survivor {i}") for i in range(3)]
    fresh_index.upsert(rows)
    # With pymilvus's delete(ids=...), the first id would also delete rows[0].
    fresh_index.delete([f"x', '{rows[0].id}", 'x" or id != "'])
    assert fresh_index.count() == 3


def test_upsert_replaces_an_existing_id(fresh_index: MilvusIndex) -> None:
    old = mem("the original wording about kiwis", namespace="t/a", tags=("old",))
    fresh_index.upsert([old, mem("something else entirely")])
    new = mem("rewritten wording about mangoes", namespace="t/b", tags=("new",), id=old.id)
    fresh_index.upsert([new])
    assert fresh_index.count() == 2
    both = IndexFilter(namespaces=("t/a", "t/b"))
    assert fresh_index.search_keyword("kiwis", both, 5) == []
    assert fresh_index.search_keyword("mangoes", both, 5)[0][0] == old.id
    assert dense_ids(fresh_index, IndexFilter(namespaces=("t/a",), tags_any=("old",))) == set()
    assert dense_ids(fresh_index, IndexFilter(namespaces=("t/b",), tags_any=("new",))) == {old.id}


def test_last_write_wins_within_one_batch(fresh_index: MilvusIndex) -> None:
    first = mem("first version apples")
    second = mem("second version pears", id=first.id)
    fresh_index.upsert([first, second])
    assert fresh_index.count() == 1
    assert fresh_index.search_keyword("pears", IndexFilter(namespaces=("t/a",)), 5)[0][0] == first.id


def test_upsert_rejects_bad_rows(fresh_index: MilvusIndex) -> None:
    with pytest.raises(ValueError, match="dimensions"):
        fresh_index.upsert([mem("short", vector=[1.0, 0.0])])
    with pytest.raises(ValueError, match="NaN"):
        fresh_index.upsert([mem("nan", vector=[math.nan] * DIM)])
    with pytest.raises(ValueError, match="expires_at_ms"):
        fresh_index.upsert([mem("negative", expires=-1)])
    assert fresh_index.count() == 0


def test_long_multibyte_content_is_cut_to_the_varchar_limit(fresh_index: MilvusIndex) -> None:
    fresh_index.upsert([mem("🦄" * 16384 + " tail")])  # 65541 UTF-8 bytes
    assert fresh_index.count() == 1


def test_recreate_empties(fresh_index: MilvusIndex) -> None:
    fresh_index.upsert([mem(f"row {i}") for i in range(3)])
    assert fresh_index.count() == 3
    fresh_index.recreate()
    assert fresh_index.count() == 0
    assert fresh_index.recorded_model() == (MODEL, DIM)
    assert fresh_index.search_dense(unit(1), IndexFilter(namespaces=("t/a",)), 5) == []


def test_concurrent_searches_while_upserting(uri: str) -> None:
    index = MilvusIndex(uri, collection=f"c_{uuid.uuid4().hex[:12]}", model_id=MODEL, dimension=DIM)
    index.ensure_collection()
    index.upsert([mem(f"seed row {i}", namespace=f"t/{i % 3}") for i in range(30)])
    flt = IndexFilter(namespaces=("t/0", "t/1", "t/2"), now_ms=NOW)
    errors: list[BaseException] = []
    done = threading.Event()

    def searcher(seed: int) -> None:
        try:
            while not done.is_set():
                assert len(index.search_dense(unit(seed), flt, 10)) == 10
                index.search_keyword("row", flt, 10)
        except BaseException as exc:  # noqa: BLE001 - collected for the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=searcher, args=(s,)) for s in range(6)]
    for t in threads:
        t.start()
    try:
        for batch in range(10):
            index.upsert([mem(f"batch {batch} row {i}", namespace=f"t/{i % 3}") for i in range(15)])
            index.flush()  # flushes while searches run
    finally:
        done.set()
        for t in threads:
            t.join()
    assert errors == []
    assert index.count() == 30 + 150
    index.close()


# -- analysis: stemming and Chinese, on both backends ---------------------------------


def test_keyword_search_stems_english(fresh_index: MilvusIndex) -> None:
    rule = mem("Deploys freeze on Fridays after 3pm")
    art = mem("The orchards were painted last spring")
    bill = mem("Invoices are due at the end of the month")
    fresh_index.upsert([rule, art, bill, *(mem(f"unrelated filler note {i}") for i in range(5))])
    flt = IndexFilter(namespaces=("t/a",))
    assert fresh_index.search_keyword("deploy friday", flt, 3)[0][0] == rule.id
    assert fresh_index.search_keyword("orchard paint", flt, 3)[0][0] == art.id
    assert fresh_index.search_keyword("invoice", flt, 3)[0][0] == bill.id


def test_keyword_search_segments_chinese(fresh_index: MilvusIndex) -> None:
    allergy = mem("小雨对花生过敏")
    codename = mem("项目代号是Orion")
    mixed = mem("我们周五不部署 deploys to production")
    fresh_index.upsert([allergy, codename, mixed, mem("今天天气很好"), mem("an English sentence about weather")])
    flt = IndexFilter(namespaces=("t/a",))
    assert [i for i, _ in fresh_index.search_keyword("花生", flt, 5)] == [allergy.id]
    assert [i for i, _ in fresh_index.search_keyword("Orion", flt, 5)] == [codename.id]
    assert [i for i, _ in fresh_index.search_keyword("部署", flt, 5)] == [mixed.id]
    assert [i for i, _ in fresh_index.search_keyword("deploy", flt, 5)] == [mixed.id]
    # Punctuation and spaces are tokens of jieba's; they must not match everything.
    assert fresh_index.search_keyword("?", flt, 5) == []


# -- backend differences -------------------------------------------------------------


def test_lite_is_detected_and_keeps_namespace_a_plain_field(fresh_index: MilvusIndex) -> None:
    assert fresh_index.backend == Backend(lite=True)
    fields = {f["name"]: f for f in fresh_index._client.describe_collection(fresh_index._collection)["fields"]}  # noqa: SLF001
    assert not fields[schema.NAMESPACE].get("is_partition_key")
    assert fresh_index.dense_index_type == "BIN_FLAT" and schema.DENSE not in fields


SERVER_25 = Backend(lite=False, version=(2, 5))
SERVER_23 = Backend(lite=False, version=(2, 3))


def test_server_schema_makes_namespace_the_partition_key() -> None:
    """The server code path, checked offline: float vectors under HNSW, namespace as partition key from 2.5 on."""
    assert SERVER_25.namespace_partition_key and SERVER_25.dense_index().index_type == "HNSW"
    built = schema.build_schema(
        DIM, schema.DEFAULT_ANALYZER, schema.record(MODEL, DIM, schema.DEFAULT_ANALYZER, SERVER_25), SERVER_25
    )
    by_name = {f.name: f for f in built.fields}
    assert by_name[schema.NAMESPACE].is_partition_key and schema.DENSE in by_name and schema.SPARSE in by_name
    assert schema.parse_description(built.description)[schema.RECORD_MODEL] == MODEL
    assert schema.parse_description(built.description)[schema.RECORD_LAYOUT] == schema.LAYOUT_VERSION
    lite = Backend(lite=True)
    assert not lite.namespace_partition_key and lite.coded_dense and lite.dense_index().index_type == "BIN_FLAT"


def test_a_server_without_bm25_gets_no_sparse_field_and_no_partition_key() -> None:
    """Milvus 2.3 (the PyPI server) has no BM25 and files upserted rows under the wrong partition key."""
    assert not SERVER_23.bm25 and not SERVER_23.namespace_partition_key
    rec = schema.record(MODEL, DIM, schema.DEFAULT_ANALYZER, SERVER_23)
    built = schema.build_schema(DIM, schema.DEFAULT_ANALYZER, rec, SERVER_23)
    by_name = {f.name: f for f in built.fields}
    assert schema.SPARSE not in by_name and not built.functions and not by_name[schema.NAMESPACE].is_partition_key
    # Recorded without an analyzer: once the server has BM25, the hub asks for a rebuild instead of using it half-made.
    assert rec[schema.RECORD_ANALYZER] == "none"
    assert schema.vector_fields(SERVER_23) == {schema.DENSE}


def test_detect_tells_lite_from_a_server() -> None:
    class Unimplemented(grpc.RpcError):
        def code(self) -> grpc.StatusCode:
            return grpc.StatusCode.UNIMPLEMENTED

    def lite_version() -> str:
        raise Unimplemented()

    assert detect(lite_version) == Backend(lite=True)
    assert detect(lambda: "v2.5.26") == SERVER_25
    assert detect(lambda: "v2.3.5-lite") == SERVER_23
    assert detect(lambda: "v2.6.1").bm25 and detect(lambda: "v2.6.1").namespace_partition_key


def test_partition_key_filters_fail_on_lite(uri: str) -> None:
    """Why Lite keeps the namespace a plain field: a filter on a partition-key field is refused there."""
    index = MilvusIndex(uri, collection=f"pk_{uuid.uuid4().hex[:8]}", model_id=MODEL, dimension=DIM)
    name = index._collection  # noqa: SLF001
    index._client.create_collection(  # noqa: SLF001 - a collection laid out for a server
        name,
        schema=schema.build_schema(
            DIM, schema.DEFAULT_ANALYZER, schema.record(MODEL, DIM, schema.DEFAULT_ANALYZER, SERVER_25), SERVER_25
        ),
        index_params=schema.build_index_params(SERVER_25, DenseIndex("FLAT")),
    )
    index._client.insert(name, [to_row(mem("partition key row"), DIM, SERVER_25)])  # noqa: SLF001
    index._client.load_collection(name)  # noqa: SLF001
    with pytest.raises(Exception, match="Invalid expr"):
        index._client.search(name, data=[unit(1)], anns_field=schema.DENSE, limit=5, filter='namespace in ["t/a"]')  # noqa: SLF001
    index.close()


def test_a_collection_of_the_float_layout_is_refused_with_the_reason(uri: str) -> None:
    """A Lite collection made by an older memhub (float vectors, layout 2) is not searched as codes: the hub asks for
    `memhub reindex` and says what the new layout brings."""
    index = MilvusIndex(uri, collection=f"old_{uuid.uuid4().hex[:8]}", model_id=MODEL, dimension=DIM)
    name = index._collection  # noqa: SLF001
    rec = schema.record(MODEL, DIM, schema.DEFAULT_ANALYZER, SERVER_25)  # layout 2, what Lite collections recorded
    index._client.create_collection(name, schema=schema.build_schema(DIM, schema.DEFAULT_ANALYZER, rec, SERVER_25))  # noqa: SLF001
    with pytest.raises(IndexModelMismatch, match="layout '2'.*memhub reindex") as caught:
        index.ensure_collection()
    assert "codes" in str(caught.value)
    index.close()


# -- failures and healing ------------------------------------------------------------


def test_unreachable_server_is_unavailable() -> None:
    port = free_port()
    with pytest.raises(IndexUnavailable) as caught:
        MilvusIndex(f"http://admin:s3cret@127.0.0.1:{port}", model_id=MODEL, dimension=DIM)
    msg = str(caught.value)
    assert f"127.0.0.1:{port}" in msg and "running" in msg
    assert "s3cret" not in msg


@pytest.mark.parametrize(
    ("uri_of", "message"),
    [
        (lambda tmp: "/no/such/dir/index.db", "does not exist"),
        (lambda tmp: "ftp://example.org/milvus", "check"),
        (lambda tmp: str(tmp / "bad name!.db"), "file name must match"),
        (lambda tmp: str(tmp / ("x" * 40 + ".db")), "at most 36"),
    ],
)
def test_bad_uri_is_unavailable(tmp_path: Path, uri_of: Callable[[Path], str], message: str) -> None:
    with pytest.raises(IndexUnavailable, match=message):
        MilvusIndex(uri_of(tmp_path), model_id=MODEL, dimension=DIM)


def test_an_old_lite_directory_is_refused_with_advice(tmp_path: Path) -> None:
    (tmp_path / "milvus.db").mkdir()
    with pytest.raises(IndexUnavailable, match="Milvus Lite 3.x"):
        MilvusIndex(str(tmp_path / "milvus.db"), model_id=MODEL, dimension=DIM)


def test_a_data_file_is_used_by_one_process_only(tmp_path: Path) -> None:
    holder = LiteServer(tmp_path / "held.db", address=f"127.0.0.1:{free_port()}")
    holder.start()
    try:
        script = f"from memhub.index import MilvusIndex\nMilvusIndex({str(tmp_path / 'held.db')!r}, model_id='m', dimension=8)\n"
        out = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=Path(__file__).parent.parent
        )
        assert out.returncode != 0
        assert "in use by another process" in out.stderr and "memhub index-server" in out.stderr
    finally:
        holder.stop()


def test_embedded_server_that_dies_is_restarted(tmp_path: Path) -> None:
    index = MilvusIndex(str(tmp_path / "dies.db"), model_id=MODEL, dimension=DIM)
    try:
        index.ensure_collection()
        row = mem("survives a crash of the engine")
        index.upsert([row])
        index.flush()
        server = index._server  # noqa: SLF001
        assert server is not None
        server._proc.kill()  # noqa: SLF001 - the engine crashes
        server._proc.wait(10)  # noqa: SLF001
        # The next search notices, starts the engine again, loads the collection and answers.
        assert index.search_keyword("crash", IndexFilter(namespaces=("t/a",)), 5)[0][0] == row.id
        assert server.restarts == 1
        index.probe()
    finally:
        index.close()


def start_index_server(data_dir: Path, port: int) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-m", "memhub.cli.main", "index-server", "--data-dir", str(data_dir), "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=Path(__file__).parent.parent,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert "serving" in line, line
    return proc


def test_served_index_heals_after_its_server_restarts(tmp_path: Path) -> None:
    """`memhub index-server` killed and started again: the same MilvusIndex answers again, nothing reopened."""
    port = free_port()
    proc = start_index_server(tmp_path, port)
    index = MilvusIndex(f"http://127.0.0.1:{port}", model_id=MODEL, dimension=DIM)
    try:
        index.ensure_collection()
        row = mem("served over tcp")
        index.upsert([row])
        assert index.search_keyword("served", IndexFilter(namespaces=("t/a",)), 5)[0][0] == row.id
        proc.kill()  # kill -9: its engine exits with it (the lock it watches is released)
        proc.wait(30)
        # The engine notices the released lock by polling it: on a loaded machine it may answer a moment longer.
        deadline = time.monotonic() + 30
        while _port_open(port):
            assert time.monotonic() < deadline, "the engine kept serving after its server was killed"
            time.sleep(0.1)
        with pytest.raises(IndexUnavailable, match=f"127.0.0.1:{port}"):
            index.search_dense(unit(1), IndexFilter(namespaces=("t/a",)), 5)
        with pytest.raises(IndexUnavailable):
            index.probe()
        proc = start_index_server(tmp_path, port)
        deadline = time.monotonic() + 60
        while True:
            try:
                index.probe()
                break
            except IndexUnavailable:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        assert index.search_keyword("served", IndexFilter(namespaces=("t/a",)), 5)[0][0] == row.id
    finally:
        index.close()
        proc.terminate()
        proc.wait(30)


def _quoted_char_by_char(value: str) -> str | None:
    """The quoting rule spelled out one character at a time (None: refused)."""
    escapes = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}
    out = []
    for ch in value:
        if ch in escapes:
            out.append(escapes[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            return None
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def test_quote_treats_every_character_as_the_rule_says() -> None:
    # quote() takes a shortcut for values with nothing to escape; every code point of the BMP, and a sample above
    # it, must come out as the character-by-character rule gives, alone and between ordinary characters.
    rng = random.Random(11)
    points = [*range(0x10000), *rng.sample(range(0x10000, 0x110000), 5000)]
    for code in points:
        for value in (chr(code), f"t/a{chr(code)}b"):
            expected = _quoted_char_by_char(value)
            if expected is None:
                with pytest.raises(ValueError, match="control character"):
                    quote(value)
            else:
                assert quote(value) == expected, f"U+{code:04X}"
