"""The hub's settings for the search stages, and the stores the stages read."""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from memhub.core.index_health import IndexHealth
from memhub.core.model import Channel
from memhub.index import MilvusIndex


@dataclass(frozen=True)
class GraphSettings:
    """Bounds of the graph channel's spread (memhub/search/graph.py): they, not the data, bound its work."""

    seeds: int = 5
    """How many of the best fused hits seed the spread."""
    max_entities: int = 24
    """Entities followed per search: the query's first, then the seeds' in rank order."""
    max_degree: int = 100
    """An entity carried by more memories than this (in the readable namespaces) is not followed."""
    query_weight: float = 1.0
    """Activation of each entity the query names, against 1 for the best seed."""


@dataclass(frozen=True)
class RetrievalSettings:
    """The hub's defaults for the stages; a request may turn smoothing and expansion on or off."""

    weights: Mapping[Channel, float] = field(
        default_factory=lambda: {
            Channel.DENSE: 1.0,
            Channel.KEYWORD: 1.0,
            Channel.ENTITY: 0.0,
            Channel.TIME: 0.5,
            Channel.EXPANSION: 0.5,
            Channel.GRAPH: 0.0,
            Channel.PREFERENCE: 1.0,
        }
    )
    neighbour_smoothing: float = 0.1
    rrf_k: int = 60
    """The constant of reciprocal rank fusion: smaller lets one channel's first places count more against
    middling places in several (memhub/search/fusion.py)."""
    expansion: bool = False
    expansion_seeds: int = 3
    """How many of the first round's best hits seed the second round."""
    expansion_beta: float = 0.5
    """Share of the seeds' mean embedding added to the query's for the second dense search."""
    graph: GraphSettings = field(default_factory=GraphSettings)
    rerank_max_query_terms: int = 0
    """The model-free reranker skips queries with more content terms than this (0: never)."""
    aggregation_depth: int = 2
    """Channel lists of questions that need every relevant memory ("how many...") are this many times deeper."""
    channel_depth: int = 30
    """Each channel's list is at least this deep (three times top_k when that is more)."""
    session_spread: float = 0.0
    """For such questions: places a hit loses for each better hit of its own session (0: off; memhub/search/diversity.py)."""
    multilingual_weight: float = 1.0
    """Weight of the multilingual model's order over the head for text in another script (0: off;
    memhub/search/multilingual.py)."""
    speaker_places: int = 10
    """Places a candidate turn of a speaker other than the question's subject moves down (0: off; memhub/search/speakers.py)."""


@dataclass(frozen=True)
class IndexAccess:
    """The Milvus index as the channels use it: the index, whether it is up, and the pool calls run in."""

    index: MilvusIndex
    health: IndexHealth
    pool: ThreadPoolExecutor
    """Channels of one search run side by side: dense waits on the embedder, keyword on Milvus."""
