"""Adapters of memhub to agent frameworks, one subpackage each (each an optional extra: pip install memhub[langgraph])."""
