"""The audit log: every access decision, allowed and denied, in Postgres."""
