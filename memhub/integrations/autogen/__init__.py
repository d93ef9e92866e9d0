"""memhub as AutoGen memory: `MemhubMemory` (autogen-core 0.7, installed with --no-deps; see its module)."""

from memhub.integrations.autogen.memory import MemhubMemory

__all__ = ["MemhubMemory"]
