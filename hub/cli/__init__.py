"""The `memhub` command line."""
