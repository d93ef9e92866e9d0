"""Tests for memhub.embedding, against the real local model and a real HTTP server."""

from __future__ import annotations

import hashlib
import json
import shutil
import threading
import time
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

from memhub.embedding import (
    BatchingEmbedder,
    EmbeddingConfig,
    EmbeddingError,
    OnnxMiniLMEmbedder,
    OpenAICompatibleEmbedder,
    build_embedder,
    embed_bulk,
)
from memhub.embedding.onnx_minilm import default_model_path, default_tokenizer_path


@pytest.fixture(scope="module")
def onnx() -> Iterator[OnnxMiniLMEmbedder]:
    e = OnnxMiniLMEmbedder()
    yield e
    e.close()


def assert_unit_rows(v: np.ndarray, n: int, dim: int) -> None:
    assert v.dtype == np.float32
    assert v.shape == (n, dim)
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)


# --- local ONNX model -------------------------------------------------------


def test_onnx_shape_and_unit_norm(onnx: OnnxMiniLMEmbedder) -> None:
    texts = ["hello", "The deploy failed with error E1234 after the migration.", "", "多语言文本也可以"]
    v = onnx.embed(texts)
    assert_unit_rows(v, 4, 384)
    assert onnx.model_id == "all-MiniLM-L6-v2-onnx-int8-dynamic"  # the default: int8 arithmetic
    assert onnx.embed([]).shape == (0, 384)


def test_onnx_semantic_similarity(onnx: OnnxMiniLMEmbedder) -> None:
    a, b, c = onnx.embed(
        [
            "The user prefers dark mode in the editor.",
            "This person likes a dark colour theme for their IDE.",
            "Quarterly revenue rose four percent in Europe.",
        ]
    )
    assert a @ b > a @ c + 0.3
    assert a @ b > b @ c + 0.3


def test_onnx_batch_equals_single(onnx: OnnxMiniLMEmbedder) -> None:
    # Padding, length sorting and chunking must not change a text's vector.
    texts = ["short", "a somewhat longer sentence about retry policies and exponential backoff", "mid length text"]
    together = onnx.embed(texts)
    alone = np.vstack([onnx.embed([t]) for t in texts])
    np.testing.assert_allclose(together, alone, atol=1e-5)


def test_onnx_truncates_long_text(onnx: OnnxMiniLMEmbedder) -> None:
    # Beyond 256 word pieces the tail is ignored, as in sentence-transformers.
    head = "memory hub for agents " * 80  # > 256 word pieces
    v = onnx.embed([head, head + "completely different tail about bananas " * 20])
    np.testing.assert_allclose(v[0], v[1], atol=1e-5)


def test_onnx_is_thread_safe(onnx: OnnxMiniLMEmbedder) -> None:
    texts = [[f"parallel caller {i} text {j}" for j in range(i % 4 + 1)] for i in range(8)]
    got = run_threads(8, lambda i: onnx.embed(texts[i]))
    for i in range(8):
        np.testing.assert_allclose(got[i], onnx.embed(texts[i]), atol=1e-5)


def test_onnx_rejects_single_string(onnx: OnnxMiniLMEmbedder) -> None:
    with pytest.raises(TypeError):
        onnx.embed("not a list")


def _flip_byte(src: Path, dst: Path) -> None:
    shutil.copyfile(src, dst)
    with open(dst, "r+b") as f:
        f.seek(1000)
        b = f.read(1)
        f.seek(1000)
        f.write(bytes([b[0] ^ 0xFF]))


def test_tampered_model_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "model.onnx"
    _flip_byte(default_model_path(), bad)
    actual = hashlib.sha256(bad.read_bytes()).hexdigest()
    with pytest.raises(EmbeddingError) as ei:
        OnnxMiniLMEmbedder(onnx_model_path=bad)
    msg = str(ei.value)
    assert "sha256" in msg and "model.onnx" in msg and str(bad) in msg
    assert "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6" in msg
    assert actual in msg


def test_tampered_tokenizer_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "tokenizer.json"
    _flip_byte(default_tokenizer_path(), bad)
    with pytest.raises(EmbeddingError, match=r"tokenizer\.json.*sha256"):
        OnnxMiniLMEmbedder(tokenizer_path=bad)


def test_copied_files_are_accepted(tmp_path: Path) -> None:
    model, tok = tmp_path / "m.onnx", tmp_path / "t.json"
    shutil.copyfile(default_model_path(), model)
    shutil.copyfile(default_tokenizer_path(), tok)
    e = OnnxMiniLMEmbedder(onnx_model_path=model, tokenizer_path=tok)
    assert_unit_rows(e.embed(["works from a copy"]), 1, 384)


def test_missing_model_file(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingError, match="not found"):
        OnnxMiniLMEmbedder(onnx_model_path=tmp_path / "nope.onnx")


# --- batcher ----------------------------------------------------------------


class HashEmbedder:
    """A deterministic inner embedder that records each call it receives."""

    model_id = "hash-test"
    dimension = 8

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.closed = False

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        if any("boom" in t for t in texts):
            raise EmbeddingError("boom requested")
        return np.vstack([vector_for(t, self.dimension) for t in texts]).astype(np.float32)

    def close(self) -> None:
        self.closed = True


def vector_for(text: str, dim: int) -> np.ndarray:
    """Deterministic unit vector derived from the text's sha256."""
    raw = np.frombuffer(hashlib.sha256(text.encode()).digest()[:dim], dtype=np.uint8).astype(np.float64) - 127.5
    return raw / np.linalg.norm(raw)


def run_threads(n: int, fn) -> list:
    """Run fn(i) in n threads released together; return results or exceptions by i."""
    barrier = threading.Barrier(n)
    out: list = [None] * n

    def body(i: int) -> None:
        barrier.wait()
        try:
            out[i] = fn(i)
        except BaseException as e:  # collected for the assertions
            out[i] = e

    threads = [threading.Thread(target=body, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    return out


def test_batcher_coalesces_16_threads_onnx(onnx: OnnxMiniLMEmbedder) -> None:
    texts = [[f"thread {i} remembers fact number {j}" for j in range(2)] for i in range(16)]
    # max_batch = all 32 texts and a generous wait: the worker waits until every
    # thread has queued, so coalescing does not depend on scheduling luck.
    b = BatchingEmbedder(onnx, max_batch=32, max_wait_ms=30_000, close_inner=False)
    try:
        got = run_threads(16, lambda i: b.embed(texts[i]))
    finally:
        b.close()
    assert b.batches < 16
    assert b.batches == 1 and b.texts == 32 and b.requests == 16
    for i in range(16):
        assert isinstance(got[i], np.ndarray), got[i]
        np.testing.assert_allclose(got[i], onnx.embed(texts[i]), atol=1e-5)


def test_batcher_scatters_exact_rows() -> None:
    inner = HashEmbedder()
    # Different request sizes (1..3 texts) so offsets matter.
    texts = [[f"t{i}-{j}" for j in range(1 + i % 3)] for i in range(16)]
    total = sum(len(t) for t in texts)
    b = BatchingEmbedder(inner, max_batch=total, max_wait_ms=30_000)  # waits for exactly everyone
    got = run_threads(16, lambda i: b.embed(texts[i]))
    b.close()
    assert len(inner.calls) == 1 and b.batches == 1
    for i in range(16):
        np.testing.assert_array_equal(got[i], np.vstack([vector_for(t, 8) for t in texts[i]]).astype(np.float32))
    assert inner.closed  # close() closes an owned inner embedder


def test_batcher_max_batch_splits() -> None:
    inner = HashEmbedder()
    b = BatchingEmbedder(inner, max_batch=4, max_wait_ms=30_000)
    got = run_threads(8, lambda i: b.embed([f"x{i}"]))
    b.close()
    assert b.batches == 2 and all(len(c) == 4 for c in inner.calls)
    for i in range(8):
        np.testing.assert_array_equal(got[i][0], vector_for(f"x{i}", 8).astype(np.float32))


def test_batcher_lone_request_flushes_after_wait() -> None:
    b = BatchingEmbedder(HashEmbedder(), max_batch=64, max_wait_ms=1.0)
    v = b.embed(["alone"])
    b.close()
    assert v.shape == (1, 8) and b.batches == 1


def test_batcher_oversized_request_goes_alone() -> None:
    inner = HashEmbedder()
    b = BatchingEmbedder(inner, max_batch=2, max_wait_ms=1.0)
    v = b.embed([f"big{i}" for i in range(5)])
    b.close()
    assert v.shape == (5, 8) and inner.calls == [[f"big{i}" for i in range(5)]]


def test_batcher_errors_reach_every_caller_of_the_batch() -> None:
    inner = HashEmbedder()
    b = BatchingEmbedder(inner, max_batch=4, max_wait_ms=30_000)
    got = run_threads(4, lambda i: b.embed(["boom" if i == 0 else f"fine {i}"]))
    assert b.batches == 1
    for r in got:
        assert isinstance(r, EmbeddingError) and "boom requested" in str(r)
    # The worker survives a failed batch.
    again = run_threads(4, lambda i: b.embed([f"after {i}"]))
    b.close()
    assert b.batches == 2 and all(isinstance(r, np.ndarray) and r.shape == (1, 8) for r in again)


def test_batcher_keeps_exception_type() -> None:
    class Broken(HashEmbedder):
        def embed(self, texts: Sequence[str]) -> np.ndarray:
            raise RuntimeError("model crashed")

    b = BatchingEmbedder(Broken(), max_wait_ms=1.0)
    with pytest.raises(RuntimeError, match="model crashed") as ei:
        b.embed(["x"])
    assert isinstance(ei.value.__cause__, RuntimeError)  # the shared original, for the worker's traceback
    b.close()


def test_batcher_closed_refuses() -> None:
    b = BatchingEmbedder(HashEmbedder())
    b.close()
    b.close()  # idempotent
    with pytest.raises(EmbeddingError, match="closed"):
        b.embed(["late"])


# --- OpenAI-compatible HTTP -------------------------------------------------


class FakeEmbeddingsHandler(BaseHTTPRequestHandler):
    """A tiny OpenAI-style /v1/embeddings; the model name selects a behaviour."""

    seen: list[dict] = []

    def do_POST(self) -> None:  # noqa: N802 (http.server API)
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        FakeEmbeddingsHandler.seen.append({"path": self.path, "auth": self.headers.get("authorization"), "body": body})
        model, inputs = body["model"], body["input"]
        dim = 3 if model == "wrongdim" else 8
        data = [
            {"object": "embedding", "index": i, "embedding": (vector_for(t, 8)[:dim] * 5.0).tolist()}
            for i, t in enumerate(inputs)
        ]
        data.reverse()  # out of order on purpose: clients must sort by index
        if model == "short":
            data = data[1:]
        if model == "malformed":
            self._send(200, b'{"object": "list", "dat')
        elif model == "nodata":
            self._send(200, json.dumps({"object": "list", "error": "nope"}).encode())
        elif model == "secret" and self.headers.get("authorization") != "Bearer s3cret":
            self._send(401, b'{"error": "unauthorized"}')
        else:
            self._send(200, json.dumps({"object": "list", "data": data, "model": model}).encode())

    def _send(self, status: int, payload: bytes) -> None:
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: object) -> None:  # keep test output quiet
        pass


@pytest.fixture()
def server() -> Iterator[str]:
    FakeEmbeddingsHandler.seen = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), FakeEmbeddingsHandler)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


def test_openai_orders_by_index_and_normalises(server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMHUB_EMBEDDING_API_KEY", raising=False)
    e = OpenAICompatibleEmbedder(server + "/", "good", 8, max_batch=2)
    texts = [f"text {i}" for i in range(5)]
    v = e.embed(texts)
    e.close()
    assert e.model_id == "openai:good"
    assert_unit_rows(v, 5, 8)
    np.testing.assert_allclose(v, np.vstack([vector_for(t, 8) for t in texts]), atol=1e-6)
    # max_batch=2 -> 3 requests, each with the configured model, no auth header.
    assert [len(s["body"]["input"]) for s in FakeEmbeddingsHandler.seen] == [2, 2, 1]
    assert all(s["path"] == "/v1/embeddings" and s["auth"] is None for s in FakeEmbeddingsHandler.seen)


def test_openai_api_key_from_env(server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEST_EMBED_KEY", "s3cret")
    e = OpenAICompatibleEmbedder(server, "secret", 8, api_key_env="TEST_EMBED_KEY")
    assert e.embed(["x"]).shape == (1, 8)
    assert FakeEmbeddingsHandler.seen[-1]["auth"] == "Bearer s3cret"
    monkeypatch.delenv("TEST_EMBED_KEY")
    e2 = OpenAICompatibleEmbedder(server, "secret", 8, api_key_env="TEST_EMBED_KEY")
    with pytest.raises(EmbeddingError, match="TEST_EMBED_KEY"):
        e2.embed(["x"])


def test_openai_malformed_response(server: str) -> None:
    e = OpenAICompatibleEmbedder(server, "malformed", 8)
    with pytest.raises(EmbeddingError, match="not JSON"):
        e.embed(["a"])
    e = OpenAICompatibleEmbedder(server, "nodata", 8)
    with pytest.raises(EmbeddingError, match="'data'"):
        e.embed(["a"])


def test_openai_wrong_dimension(server: str) -> None:
    e = OpenAICompatibleEmbedder(server, "wrongdim", 8)
    with pytest.raises(EmbeddingError, match=r"3-d vectors but 8 were configured"):
        e.embed(["a", "b"])


def test_openai_wrong_count(server: str) -> None:
    e = OpenAICompatibleEmbedder(server, "short", 8)
    with pytest.raises(EmbeddingError, match="1 embeddings for 2 inputs"):
        e.embed(["a", "b"])


def test_openai_unreachable() -> None:
    # Port 9 (discard) on loopback: nothing listens there in the test environment.
    e = OpenAICompatibleEmbedder("http://127.0.0.1:9/v1", "m", 8, timeout_s=2.0)
    with pytest.raises(EmbeddingError, match="unreachable"):
        e.embed(["a"])


# --- config and build_embedder ----------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"provider": "magic"}, "provider"),
        ({"dimension": 0}, "dimension"),
        ({"dimension": 512}, "dimension"),
        ({"batch_max": 0}, "batch_max"),
        ({"batch_wait_ms": -1}, "batch_wait_ms"),
        ({"quantize": "int4"}, "quantize"),
        ({"provider": "openai", "model": "m"}, "base_url"),
        ({"provider": "openai", "base_url": "ftp://x"}, "base_url"),
        ({"provider": "openai", "base_url": "http://x/v1"}, "model"),
        ({"provider": "openai", "base_url": "http://x/v1", "model": "m", "api_key_env": "sk-abc123"}, "api_key_env"),
    ],
)
def test_config_validate_names_field(kwargs: dict, field: str) -> None:
    with pytest.raises(ValueError, match=field):
        EmbeddingConfig(**kwargs).validate()


def test_build_embedder_local() -> None:
    e = build_embedder(EmbeddingConfig())
    try:
        assert isinstance(e, BatchingEmbedder) and isinstance(e.inner, OnnxMiniLMEmbedder)
        assert_unit_rows(e.embed(["built from config"]), 1, 384)
    finally:
        e.close()


def test_build_embedder_openai(server: str) -> None:
    e = build_embedder(EmbeddingConfig(provider="openai", base_url=server, model="good", dimension=8))
    try:
        assert e.model_id == "openai:good" and e.dimension == 8
        np.testing.assert_allclose(e.embed(["q"])[0], vector_for("q", 8), atol=1e-6)
    finally:
        e.close()


# --- batcher: bulk lane, priorities, workers ----------------------------------


def hashed(texts: Sequence[str], dim: int = 8) -> np.ndarray:
    """What HashEmbedder returns for ``texts``, row by row."""
    return np.vstack([vector_for(t, dim) for t in texts]).astype(np.float32)


def test_embed_bulk_matches_embed_row_for_row_across_chunks() -> None:
    """embed_bulk cuts work into bulk_chunk-sized model calls and stitches the rows back in input order."""
    inner = HashEmbedder()
    texts = [f"bulk text {i}" for i in range(11)]  # 3 chunks of 4, 4 and 3
    b = BatchingEmbedder(inner, bulk_chunk=4)
    try:
        bulk = b.embed_bulk(texts)
        single = b.embed(texts)
        assert b.embed_bulk([]).shape == (0, 8)
    finally:
        b.close()
    np.testing.assert_array_equal(bulk, single)
    np.testing.assert_array_equal(bulk, hashed(texts))
    bulk_calls = inner.calls[:-1]  # the last call is the embed() of all 11
    assert [len(c) for c in bulk_calls] == [4, 4, 3]
    assert [t for c in bulk_calls for t in c] == texts


def test_embed_bulk_matches_embed_with_the_real_model(onnx: OnnxMiniLMEmbedder) -> None:
    """With the local model too, chunking on the bulk lane changes no text's vector nor the row order."""
    texts = ["deploys freeze on Fridays", "", "the cache ran out of memory", "Alice prefers German", "ERR-4312"]
    b = BatchingEmbedder(onnx, bulk_chunk=2, close_inner=False)
    try:
        bulk = b.embed_bulk(texts)
    finally:
        b.close()
    np.testing.assert_allclose(bulk, onnx.embed(texts), atol=1e-5)


class GatedEmbedder(HashEmbedder):
    """HashEmbedder that holds a call containing one of ``holds``' texts until that text's event is set.

    ``released[text]`` records whether the event came before the timeout,
    so a test learns what had happened by the time the model got there.
    """

    def __init__(self, holds: dict[str, threading.Event], timeout_s: float = 10.0) -> None:
        super().__init__()
        self.holds = holds
        self.timeout_s = timeout_s
        self.entered: dict[str, threading.Event] = {t: threading.Event() for t in holds}
        self.released: dict[str, bool] = {}

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        for t in texts:
            if t in self.holds:
                self.entered[t].set()
                self.released[t] = self.holds[t].wait(self.timeout_s)
        return super().embed(texts)


def wait_for(check, what: str, timeout_s: float = 30.0) -> None:  # noqa: ANN001
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(0.005)


def test_a_query_overtakes_a_long_bulk_job() -> None:
    """On one worker, a query arriving during a 10-chunk bulk job is served after the chunk in progress, not after the job.

    The model holds the first chunk until the query is queued, and the last
    chunk until the query's embed() has returned (or 10 s pass, which fails).
    """
    bulk_texts = [f"bulk {i}" for i in range(20)]
    gate, query_returned = threading.Event(), threading.Event()
    inner = GatedEmbedder({"bulk 0": gate, "bulk 19": query_returned})
    b = BatchingEmbedder(inner, bulk_chunk=2, workers=1)
    results: dict[str, np.ndarray] = {}

    def bulk() -> None:
        results["bulk"] = b.embed_bulk(bulk_texts)

    def query() -> None:
        results["query"] = b.embed(["query"])
        query_returned.set()

    threads = [threading.Thread(target=bulk), threading.Thread(target=query)]
    try:
        threads[0].start()
        assert inner.entered["bulk 0"].wait(30)  # the worker is in chunk 1; chunks 2..10 wait in the bulk lane
        threads[1].start()
        # White-box wait: the query sits in the interactive lane before the worker may move on.
        wait_for(lambda: len(b._queue) == 1, "the query is queued")  # noqa: SLF001
        gate.set()
        for t in threads:
            t.join(60)
    finally:
        gate.set()
        query_returned.set()
        b.close()
    assert inner.released["bulk 19"], "the query was still waiting when the bulk job's last chunk was embedded"
    # Served right after the chunk that was running, ahead of the 9 chunks still queued.
    assert inner.calls[0] == ["bulk 0", "bulk 1"] and inner.calls[1] == ["query"]
    assert [len(c) for c in inner.calls[2:]] == [2] * 9
    np.testing.assert_array_equal(results["query"], hashed(["query"]))
    np.testing.assert_array_equal(results["bulk"], hashed(bulk_texts))


class ConcurrencyProbe(HashEmbedder):
    """HashEmbedder that records the most calls running at once; its first two calls wait for each other.

    With fewer than two batches in flight at once the rendezvous times out and
    those calls fail (BrokenBarrierError), so a serial batcher cannot pass.
    """

    def __init__(self, rendezvous_timeout_s: float = 10.0) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._barrier = threading.Barrier(2, timeout=rendezvous_timeout_s)
        self._started = 0
        self.active = 0
        self.max_active = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            self._started += 1
            rendezvous = self._started <= 2
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        try:
            if rendezvous:
                self._barrier.wait()
            return super().embed(texts)
        finally:
            with self._lock:
                self.active -= 1


def test_two_workers_embed_two_batches_at_once() -> None:
    """workers=2: two queries arriving together run as two model calls side by side, and each gets its own rows."""
    inner = ConcurrencyProbe()
    b = BatchingEmbedder(inner, max_batch=1, workers=2)  # max_batch=1: the two queries cannot share a batch
    try:
        got = run_threads(2, lambda i: b.embed([f"query {i}"]))
    finally:
        b.close()
    assert inner.max_active == 2
    for i in range(2):
        assert isinstance(got[i], np.ndarray), got[i]
        np.testing.assert_array_equal(got[i], hashed([f"query {i}"]))


def test_two_workers_share_the_chunks_of_one_bulk_job() -> None:
    """workers=2: the chunks of a single embed_bulk call are embedded two at a time, rows still in input order."""
    inner = ConcurrencyProbe(rendezvous_timeout_s=3.0)
    texts = [f"bulk {i}" for i in range(10)]
    b = BatchingEmbedder(inner, bulk_chunk=2, workers=2)
    try:
        v = b.embed_bulk(texts)
    finally:
        b.close()
    assert inner.max_active == 2
    np.testing.assert_array_equal(v, hashed(texts))


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"workers": 0}, "workers"),
        ({"workers": -1}, "workers"),
        ({"bulk_chunk": 0}, "bulk_chunk"),
        ({"max_batch": 0}, "max_batch"),
        ({"max_wait_ms": -1.0}, "max_wait_ms"),
    ],
)
def test_batcher_rejects_invalid_settings(kwargs: dict, field: str) -> None:
    """Nonsense worker counts and sizes fail at construction with a ValueError naming the setting."""
    inner = HashEmbedder()
    with pytest.raises(ValueError, match=field):
        BatchingEmbedder(inner, **kwargs)
    assert not inner.closed


def test_embed_bulk_helper_uses_the_bulk_lane_or_falls_back_to_embed() -> None:
    """memhub.embedding.embed_bulk: the bulk lane (chunked) for a batcher, plain embed() for an embedder without one."""
    texts = [f"t{i}" for i in range(5)]
    plain = HashEmbedder()
    np.testing.assert_array_equal(embed_bulk(plain, texts), hashed(texts))
    assert plain.calls == [texts]  # one embed() call with everything

    inner = HashEmbedder()
    b = BatchingEmbedder(inner, bulk_chunk=2)
    try:
        np.testing.assert_array_equal(embed_bulk(b, texts), hashed(texts))
    finally:
        b.close()
    assert [len(c) for c in inner.calls] == [2, 2, 1]  # chunked: it went through BatchingEmbedder.embed_bulk
