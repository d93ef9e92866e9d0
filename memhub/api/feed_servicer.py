"""ChangeFeedService over gRPC: one SubscribeChanges stream per call (memhub/api/feed_stream.py does the work)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc

from memhub.api.feed_stream import FeedStream
from memhub.api.identity import current_caller
from memhub.auth import TokenVerifier, bearer_token
from memhub.feed.service import ChangeFeed
from memhub.v1 import changes_pb2 as cpb
from memhub.v1 import changes_pb2_grpc as cpb_grpc


class ChangeFeedServicer(cpb_grpc.ChangeFeedServiceServicer):
    def __init__(self, feed: ChangeFeed, verifier: TokenVerifier) -> None:
        self._feed = feed
        self._verifier = verifier

    async def SubscribeChanges(
        self, request: cpb.SubscribeChangesRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[cpb.ChangeFeedMessage]:
        caller = current_caller()  # the interceptor verified the token; the stream re-verifies it as it runs
        token = bearer_token(dict(context.invocation_metadata() or ()).get("authorization"))
        async for message in FeedStream(self._feed, self._verifier, context).messages(caller, request, token):
            yield message
