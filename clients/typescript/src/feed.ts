// Following the change feed across disconnects and hub restarts, as memhub's Python FeedFollower does.
import { Code } from "@connectrpc/connect";
import type { MemhubClient } from "./client.js";
import { MemhubError } from "./errors.js";
import type { ChangeFeedMessage } from "./gen/memhub/v1/changes_pb.js";

/** Ends a retry can fix: the hub restarting or unreachable, the idle timeout, a slow-consumer drop, a busy hub. */
const RETRYABLE = new Set([
  Code.Unavailable,
  Code.DeadlineExceeded,
  Code.ResourceExhausted,
  Code.Internal,
  Code.Unknown,
  Code.Aborted,
]);
const SEEN_CURSORS = 4096;

export interface FollowOptions {
  /** Resume after this cursor (a ChangeFollower's `cursor` from an earlier run). */
  cursor?: string;
  kinds?: string[];
  types?: string[];
  tags?: string[];
  changes?: string[];
  /** Stops the following (the iteration ends). */
  signal?: AbortSignal;
  /** Told of each retryable end before the wait. */
  onRetry?: (error: MemhubError, waitMs: number) => void;
  maxBackoffMs?: number;
}

/** `for await (const message of client.followChanges(["team"]))`; `cursor` is where to resume later. */
export class ChangeFollower implements AsyncIterable<ChangeFeedMessage> {
  /** The cursor of the last message received: resuming from it misses nothing. */
  cursor: string;
  reconnects = 0;
  private readonly seen = new Set<string>();
  private readonly stop = new AbortController();

  constructor(
    private readonly client: MemhubClient,
    private readonly namespaces: string[],
    private readonly options: FollowOptions,
  ) {
    this.cursor = options.cursor ?? "";
    options.signal?.addEventListener("abort", () => this.close(), { once: true });
  }

  /** Stop following: the iteration ends. */
  close(): void {
    this.stop.abort();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<ChangeFeedMessage> {
    let backoffMs = 500;
    const { kinds, types, tags, changes } = this.options;
    while (!this.stop.signal.aborted) {
      try {
        const stream = this.client.subscribeChanges(this.namespaces, {
          cursor: this.cursor,
          kinds,
          types,
          tags,
          changes,
          signal: this.stop.signal,
        });
        for await (const message of stream) {
          backoffMs = 500; // the stream works again
          if (message.message.case === "heartbeat") {
            this.cursor = message.message.value.cursor;
            yield message;
            continue;
          }
          const cursor = message.message.case === "change" ? message.message.value.cursor : "";
          if (this.seen.has(cursor)) {
            continue; // a repeat after a resume (delivery is at least once)
          }
          this.remember(cursor);
          this.cursor = cursor;
          yield message;
        }
        return; // the hub ended the stream without an error
      } catch (err) {
        if (this.stop.signal.aborted) {
          return;
        }
        if (!(err instanceof MemhubError) || !RETRYABLE.has(err.code)) {
          throw err;
        }
        const waitMs = backoffMs / 2 + Math.random() * (backoffMs / 2);
        this.options.onRetry?.(err, waitMs);
        this.reconnects += 1;
        await sleep(waitMs, this.stop.signal);
        backoffMs = Math.min(backoffMs * 2, this.options.maxBackoffMs ?? 10_000);
      }
    }
  }

  private remember(cursor: string): void {
    this.seen.add(cursor);
    if (this.seen.size > SEEN_CURSORS) {
      const oldest = this.seen.values().next().value;
      if (oldest !== undefined) {
        this.seen.delete(oldest);
      }
    }
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve();
    }, { once: true });
  });
}
