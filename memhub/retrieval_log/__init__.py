"""The retrieval log: what every search returned, and which of it agents marked used (issue 12 part 5).

Kept light on purpose (no re-exports): memhub.config imports the settings from here, and client commands
must not load SQLAlchemy on the way (tests/test_cli_parsing.py).
"""
