"""memhub as Google ADK's memory service (pip install "memhub[google-adk]"): `MemhubMemoryService`."""

from memhub.integrations.google_adk.memory_service import MemhubMemoryService

__all__ = ["MemhubMemoryService"]
