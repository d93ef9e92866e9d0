"""The change feed's trailing-metadata keys: what clients read from an ended stream (no other imports, so the
client and the CLI read them without loading the feed's server side)."""

RESUME_CURSOR_KEY = "memhub-resume-cursor"
"""The cursor to resume from, sent with every error that ends a SubscribeChanges stream."""
