// The hub's errors as one Error class: the gRPC status, the hub's message, and what the trailers carry.
import { Code, ConnectError } from "@connectrpc/connect";

/** gRPC status names, as the hub's documentation and the Python client's errors spell them. */
const STATUS_NAMES: Record<Code, string> = {
  [Code.Canceled]: "CANCELLED",
  [Code.Unknown]: "UNKNOWN",
  [Code.InvalidArgument]: "INVALID_ARGUMENT",
  [Code.DeadlineExceeded]: "DEADLINE_EXCEEDED",
  [Code.NotFound]: "NOT_FOUND",
  [Code.AlreadyExists]: "ALREADY_EXISTS",
  [Code.PermissionDenied]: "PERMISSION_DENIED",
  [Code.ResourceExhausted]: "RESOURCE_EXHAUSTED",
  [Code.FailedPrecondition]: "FAILED_PRECONDITION",
  [Code.Aborted]: "ABORTED",
  [Code.OutOfRange]: "OUT_OF_RANGE",
  [Code.Unimplemented]: "UNIMPLEMENTED",
  [Code.Internal]: "INTERNAL",
  [Code.Unavailable]: "UNAVAILABLE",
  [Code.DataLoss]: "DATA_LOSS",
  [Code.Unauthenticated]: "UNAUTHENTICATED",
};

/** What an ABORTED answer to an expected version says (memory.proto, "Versions"). */
export interface VersionConflict {
  /** The expectation that failed, e.g. "memories[0].expected_version". */
  field: string;
  /** The version now; 0 when no active memory holds the subject any more. */
  currentVersion: bigint;
  /** The memory that holds it now ("" when none). */
  currentId: string;
}

/** A call the hub (or the connection to it) refused. */
export class MemhubError extends Error {
  /** The gRPC status, e.g. "PERMISSION_DENIED". */
  readonly status: string;
  readonly code: Code;
  /** The hub's own message (it names the field, action or limit concerned). */
  readonly details: string;
  /** Trailing metadata of the failed call. */
  readonly metadata: Headers;

  constructor(cause: ConnectError) {
    const status = STATUS_NAMES[cause.code] ?? "UNKNOWN";
    super(`${status}: ${cause.rawMessage}`, { cause });
    this.name = "MemhubError";
    this.status = status;
    this.code = cause.code;
    this.details = cause.rawMessage;
    this.metadata = cause.metadata;
  }

  /** The version conflict a write or forget with an expected version met; undefined for any other error. */
  get versionConflict(): VersionConflict | undefined {
    const current = this.metadata.get("memhub-current-version");
    if (this.code !== Code.Aborted || current === null || !/^\d+$/.test(current)) {
      return undefined;
    }
    return {
      field: this.metadata.get("memhub-conflict-field") ?? "",
      currentVersion: BigInt(current),
      currentId: this.metadata.get("memhub-current-id") ?? "",
    };
  }

  /** The current version an ABORTED session-state put or delete reports (0n: not set); undefined otherwise. */
  get sessionVersion(): bigint | undefined {
    const match = this.code === Code.Aborted ? /current version (\d+)/.exec(this.details) : null;
    return match?.[1] === undefined ? undefined : BigInt(match[1]);
  }

  /** The cursor an ended change-feed stream says to resume from ("" when it named none). */
  get resumeCursor(): string {
    return this.metadata.get("memhub-resume-cursor") ?? "";
  }
}

/** `err` as a MemhubError when it came from a call; anything else unchanged. */
export function asMemhubError(err: unknown): unknown {
  if (err instanceof MemhubError) {
    return err;
  }
  if (err instanceof ConnectError || (err instanceof Error && err.name === "ConnectError")) {
    return new MemhubError(ConnectError.from(err));
  }
  return err;
}
