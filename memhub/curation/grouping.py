"""Grouping episodes for consolidation: by session, tag, entity or embedding clusters.

Every grouping is deterministic (same episodes in, same groups out), which
is what makes a re-run find the same groups. Each episode joins at most one
group, so no episode is consolidated twice in one run. Groups come out in
time order of their first episode, each group's episodes oldest first.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence

import numpy as np

from memhub.core.model import MemoryRecord
from memhub.curation.consolidation_model import Group, Grouping
from memhub.curation.extractive import episode_body

Embed = Callable[[Sequence[str]], np.ndarray]
EMBED_CHARS = 2_000
"""What of an episode is embedded for clustering: the model reads 256 tokens at most anyway."""


def group(
    episodes: Sequence[MemoryRecord],
    how: Grouping,
    *,
    embed: Embed,
    similarity: float,
    preferred_tags: Sequence[str] = (),
) -> list[Group]:
    """Groups of ``episodes`` (given oldest first); episodes with nothing to group by are left out."""
    if how is Grouping.SESSION:
        keyed = _by_key(episodes, _session_key)
    elif how is Grouping.TAG:
        keyed = _by_key(episodes, lambda e: _tag_key(e, preferred_tags))
    elif how is Grouping.ENTITY:
        counts = Counter(name for e in episodes for name in dict.fromkeys(e.entities))
        keyed = _by_key(episodes, lambda e: _entity_key(e, counts))
    else:
        keyed = _clusters(episodes, embed, similarity)
    groups = [Group(key, tuple(members)) for key, members in keyed.items() if members]
    return sorted(groups, key=lambda g: (g.sources[0].occurred_at, g.sources[0].id))


def split(groups: Sequence[Group], max_size: int) -> list[Group]:
    """Groups larger than ``max_size`` cut into near-equal consecutive parts ("key#1", "key#2"...)."""
    out = []
    for g in groups:
        if len(g.sources) <= max_size:
            out.append(g)
            continue
        parts = math.ceil(len(g.sources) / max_size)
        # Sizes differ by at most one (7 by 3: 3, 2, 2), so no part is left too small to consolidate.
        base, extra = divmod(len(g.sources), parts)
        start = 0
        for i in range(parts):
            end = start + base + (1 if i < extra else 0)
            out.append(Group(f"{g.key}#{i + 1}", g.sources[start:end]))
            start = end
    return out


def _by_key(episodes: Sequence[MemoryRecord], key: Callable[[MemoryRecord], str | None]) -> dict[str, list[MemoryRecord]]:
    out: dict[str, list[MemoryRecord]] = defaultdict(list)
    for e in episodes:
        k = key(e)
        if k is not None:
            out[k].append(e)
    return out


def _session_key(e: MemoryRecord) -> str:
    # No session: the day it happened is the next best "what belongs together".
    return f"session:{e.source_session}" if e.source_session else f"day:{e.occurred_at.date().isoformat()}"


def _tag_key(e: MemoryRecord, preferred: Sequence[str]) -> str | None:
    tags = [t for t in e.tags if t in preferred] if preferred else list(e.tags)
    return f"tag:{tags[0]}" if tags else None


def _entity_key(e: MemoryRecord, counts: Counter[str]) -> str | None:
    if not e.entities:
        return None
    # The entity most episodes share pulls this one into the largest group; ties by name, for determinism.
    best = min(dict.fromkeys(e.entities), key=lambda name: (-counts[name], name))
    return f"entity:{best}"


def _clusters(episodes: Sequence[MemoryRecord], embed: Embed, threshold: float) -> dict[str, list[MemoryRecord]]:
    """Average-linkage agglomerative clustering: merge the two clusters whose episodes are most similar on
    average, until no pair reaches ``threshold``.

    Deterministic (no seed, no k to choose, unlike k-means) and order-free (unlike a single leader pass, where
    an early episode that is far from the one before it starts a cluster of its own for good). The average
    cosine between two clusters is the dot product of their vector sums over the product of their sizes, so a
    merge costs one matrix row: a run of 2,000 episodes stays within seconds.
    """
    if not episodes:
        return {}
    vectors = embed([episode_body(e.content)[:EMBED_CHARS] or e.content[:EMBED_CHARS] for e in episodes]).astype(np.float64)
    n = len(episodes)
    sums = vectors.copy()
    sizes = np.ones(n)
    members: dict[int, list[int]] = {i: [i] for i in range(n)}
    links = sums @ sums.T
    np.fill_diagonal(links, -np.inf)
    while len(members) > 1:
        flat = int(np.argmax(links))  # the first maximum: ties go to the earliest pair
        i, j = divmod(flat, n)
        if links[i, j] < threshold:
            break
        i, j = min(i, j), max(i, j)
        sums[i] += sums[j]
        sizes[i] += sizes[j]
        members[i].extend(members.pop(j))
        links[j, :] = links[:, j] = -np.inf
        row = (sums @ sums[i]) / (sizes * sizes[i])
        alive = np.full(n, False)
        alive[list(members)] = True
        row[~alive] = -np.inf
        row[i] = -np.inf
        links[i, :] = links[:, i] = row
    clusters = sorted((sorted(idx) for idx in members.values()), key=lambda idx: idx[0])
    return {f"cluster:{k + 1}": [episodes[i] for i in idx] for k, idx in enumerate(clusters)}
