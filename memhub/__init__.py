"""memhub: a shared memory hub for fleets of LLM agents.

Importing this package costs nothing beyond this file: every command (`memhub --help`, a client call, the MCP
bridge) starts by importing it, and each pays only for the modules it uses.
"""

__version__ = "0.1.0"
