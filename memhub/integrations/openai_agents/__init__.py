"""memhub for the OpenAI Agents SDK (pip install "memhub[openai-agents]"): `MemhubSession`, a conversation
Session in the hub's shared session state, and `recall_tool` / `remember_tool`, memhub as function tools."""

from memhub.integrations.openai_agents.session import MemhubSession
from memhub.integrations.openai_agents.tools import recall_tool, remember_tool

__all__ = ["MemhubSession", "recall_tool", "remember_tool"]
