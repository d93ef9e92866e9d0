"""Every character of every Unicode general category, for the batteries that feed a whole class to a renderer,
a rule or a store (stored text is data: no class may be left to chance).

Built once per process on first use, not at import: walking all of sys.maxunicode takes about half a second,
which every test worker would otherwise pay at collection.
"""

from __future__ import annotations

import functools
import sys
import unicodedata


@functools.cache
def by_category() -> dict[str, list[str]]:
    """General category -> its characters in code point order; surrogates (Cs) left out, as no UTF-8 carries them."""
    out: dict[str, list[str]] = {}
    for code in range(sys.maxunicode + 1):
        ch = chr(code)
        category = unicodedata.category(ch)
        if category != "Cs":
            out.setdefault(category, []).append(ch)
    return out
