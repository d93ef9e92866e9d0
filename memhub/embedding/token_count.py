"""Counting tokens for budgets (context assembly): the shipped embedding model's WordPiece tokenizer.

all-MiniLM-L6-v2's tokenizer.json is already on disk (the local embedder
uses it), verified by its sha256, and needs no download. It is not a chat
model's tokenizer: for English text it counts within about 10-20% of
common BPE tokenizers; each CJK character is one token. Budgets stated in
these tokens are documented as such.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import lru_cache

from memhub.embedding.onnx_minilm import TOKENIZER_SHA256, default_tokenizer_path, verify_file

TOKENIZER_NAME = "all-MiniLM-L6-v2 WordPiece"

_lock = threading.Lock()


@lru_cache(maxsize=1)
def token_counter() -> Callable[[str], int]:
    """A function giving the number of tokens in a text (no special tokens, no truncation, no padding)."""
    from tokenizers import Tokenizer

    path = default_tokenizer_path()
    verify_file(path, TOKENIZER_SHA256, "tokenizer file tokenizer.json")
    tok = Tokenizer.from_file(str(path))
    tok.no_truncation()  # the shipped file truncates at 128 and pads to 128: a count needs neither
    tok.no_padding()

    def count(text: str) -> int:
        with _lock:  # one Tokenizer shared by the gRPC worker threads
            return len(tok.encode(text, add_special_tokens=False).ids)

    return count
