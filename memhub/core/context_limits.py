"""AssembleContext's bounds and defaults, apart from its code (memhub/core/context_recall.py, which loads the
search service): the MCP bridge states them in its tool schemas and must not load the hub to read them."""

DEFAULT_CANDIDATES = 30
DEFAULT_TOKEN_BUDGET = 1000
MIN_TOKEN_BUDGET, MAX_TOKEN_BUDGET = 50, 8000
DEFAULT_PER_GROUP = 5
MAX_PER_GROUP = 20
