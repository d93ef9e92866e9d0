"""The asyncio client: `AsyncMemhubClient` (grpc.aio) with the synchronous client's surface, and
`AsyncFeedFollower`, the change feed as an async iterator that resumes across disconnects.

The request builders and error readers are the synchronous client's; import them from memhub.client.
"""

from memhub.aio.client import AioFeedCall, AsyncMemhubClient
from memhub.aio.feed import AsyncFeedFollower

__all__ = ["AioFeedCall", "AsyncFeedFollower", "AsyncMemhubClient"]
