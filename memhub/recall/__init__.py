"""Query-side understanding for recall: entities and time expressions, by rules (no model, no LLM)."""
