"""Plain-Python core of the hub: validation, the memory service, retrieval.

Nothing here knows about gRPC; memhub/api adapts it to the wire.
"""
