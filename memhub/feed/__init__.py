"""The change feed: every change to a memory, in one durable order shared by all replicas, streamed to the
agents that may read it (SubscribeChanges, proto/memhub/v1/changes.proto).

- ``model``: changes, positions, filters; ``config``: MEMHUB_CHANGE_FEED_*;
- ``cursor``: positions sealed into opaque cursors;
- ``rights``: what a subscriber may see, on the policies in force;
- ``subscription``: one stream's state and its reads (memhub/db/changes.py does the SQL);
- ``notifier``: LISTEN memhub_changes, waking the streams;
- ``service``: the feed of one hub process.
"""
