"""The memory service, one module per use case (memhub/service/memory_service.py lists them)."""

from memhub.service.memory_service import MemoryService

__all__ = ["MemoryService"]
