"""memhub as LangGraph's long-term memory store: `MemhubStore` (pip install "memhub[langgraph]")."""

from memhub.integrations.langgraph.store import MemhubStore

__all__ = ["MemhubStore"]
