// A small idiomatic client of the hub: gRPC over HTTP/2 from Node (Connect's gRPC transport), one token per agent.
import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { type CallOptions, type Client, createClient, type Interceptor } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import * as names from "./enums.js";
import type { KindName, TypeName } from "./enums.js";
import { asMemhubError } from "./errors.js";
import { ChangeFollower, type FollowOptions } from "./feed.js";
import { AdminService } from "./gen/memhub/v1/admin_pb.js";
import { ChangeFeedService, type ChangeFeedMessage } from "./gen/memhub/v1/changes_pb.js";
import {
  type AssembleContextResponse,
  type ConsolidateMemoriesResponse,
  type ForgetMemoriesResponse,
  type GetMemoryHistoryResponse,
  type GetMemoryLineageResponse,
  type ListMemoriesResponse,
  type MarkUsedResponse,
  type Memory,
  type MemoryInput,
  MemoryInputSchema,
  MemoryService,
  type SearchMemoriesRequest,
  SearchMemoriesRequestSchema,
  type SearchMemoriesResponse,
  type WriteMemoriesResponse,
} from "./gen/memhub/v1/memory_pb.js";
import {
  type DeleteSessionStateResponse,
  type ListSessionStateResponse,
  type PutSessionStateResponse,
  type SessionStateEntry,
  SessionStateService,
} from "./gen/memhub/v1/session_pb.js";
import { tokenFromEnv } from "./token.js";

export interface MemhubClientOptions {
  /** host:port of the hub (default: MEMHUB_ADDRESS, else 127.0.0.1:50051), or a full http:// URL. */
  address?: string;
  /** The agent's JWT (default: tokenFromEnv(): MEMHUB_TOKEN_FILE, else MEMHUB_TOKEN). */
  token?: string;
  /** Deadline of every unary call (default 30 s). */
  timeoutMs?: number;
}

/** One memory to write; enum fields take their short names ("fact", "semantic"). */
export interface MemoryInit {
  namespace: string;
  content: string;
  type?: TypeName | number;
  kind?: KindName | number;
  tags?: string[];
  entities?: string[];
  importance?: number;
  confidence?: number;
  occurredAt?: Date;
  ttlSeconds?: number;
  subjectKey?: string;
  /** With subjectKey: the version the subject's active memory must have (0: none may exist). */
  expectedVersion?: bigint | number;
  derivedFrom?: string[];
}

export interface SearchOptions {
  topK?: number;
  kinds?: (KindName | number)[];
  types?: (TypeName | number)[];
  tags?: string[];
  channels?: (string | number)[];
  explain?: boolean;
  maxTokens?: number;
  contextWindow?: number;
  minRelevance?: number;
  flags?: (string | number)[];
  excludeFlagged?: boolean;
}

export interface ListOptions {
  pageSize?: number;
  pageToken?: string;
  kinds?: (KindName | number)[];
  types?: (TypeName | number)[];
  tags?: string[];
  statuses?: (string | number)[];
  subjectKey?: string;
}

/** An entry of the shared session state with its value parsed. */
export interface SessionValue<T = unknown> {
  value: T;
  version: bigint;
  entry: SessionStateEntry;
}

/** The memory input message for `init` (converting enum names, times and lifetimes). */
export function memoryInput(init: MemoryInit): MemoryInput {
  return create(MemoryInputSchema, {
    namespace: init.namespace,
    content: init.content,
    type: names.type(init.type ?? "event"),
    kind: init.kind === undefined ? 0 : names.kind(init.kind),
    tags: init.tags ?? [],
    entities: init.entities ?? [],
    importance: init.importance ?? 0,
    confidence: init.confidence,
    occurredAt: init.occurredAt ? timestampFromDate(init.occurredAt) : undefined,
    ttl: init.ttlSeconds === undefined ? undefined : { seconds: BigInt(Math.trunc(init.ttlSeconds)) },
    subjectKey: init.subjectKey ?? "",
    expectedVersion: init.expectedVersion === undefined ? undefined : BigInt(init.expectedVersion),
    derivedFrom: init.derivedFrom ?? [],
  });
}

/** The search request for `query` over `namespaces` (each with its descendants). */
export function searchRequest(query: string, namespaces: string[], options: SearchOptions = {}): SearchMemoriesRequest {
  return create(SearchMemoriesRequestSchema, {
    query,
    namespaces,
    topK: options.topK ?? 0,
    kinds: names.kinds(options.kinds),
    types: names.types(options.types),
    tags: options.tags ?? [],
    channels: names.channels(options.channels),
    explain: options.explain ?? false,
    maxTokens: options.maxTokens ?? 0,
    contextWindow: options.contextWindow ?? 0,
    minRelevance: options.minRelevance ?? 0,
    flags: names.flags(options.flags),
    excludeFlagged: options.excludeFlagged ?? false,
  });
}

function baseUrl(address: string): string {
  return /^https?:\/\//.test(address) ? address : `http://${address}`;
}

/** The hub as one agent: every call carries this client's token, and the hub's policies decide what it sees. */
export class MemhubClient {
  /** The generated Connect clients, for calls this wrapper does not cover. */
  readonly memory: Client<typeof MemoryService>;
  readonly sessions: Client<typeof SessionStateService>;
  readonly changes: Client<typeof ChangeFeedService>;
  readonly admin: Client<typeof AdminService>;
  readonly address: string;
  private readonly connection: Http2SessionManager;

  constructor(options: MemhubClientOptions = {}) {
    this.address = options.address ?? process.env.MEMHUB_ADDRESS?.trim() ?? "127.0.0.1:50051";
    const token = options.token ?? tokenFromEnv();
    const authorise: Interceptor = (next) => (req) => {
      req.header.set("authorization", `Bearer ${token}`);
      return next(req);
    };
    // Our own session manager, so that close() can end the HTTP/2 connection (an open one keeps Node running).
    this.connection = new Http2SessionManager(baseUrl(this.address));
    const transport = createGrpcTransport({
      baseUrl: baseUrl(this.address),
      sessionManager: this.connection,
      interceptors: [authorise],
      defaultTimeoutMs: options.timeoutMs ?? 30_000,
    });
    this.memory = createClient(MemoryService, transport);
    this.sessions = createClient(SessionStateService, transport);
    this.changes = createClient(ChangeFeedService, transport);
    this.admin = createClient(AdminService, transport);
  }

  /** Close the connection; calls still running fail. */
  close(): void {
    this.connection.abort();
  }

  async write(
    memories: MemoryInit[],
    options: { requestId?: string; sessionId?: string; waitIndexed?: boolean; force?: boolean } & CallOptions = {},
  ): Promise<WriteMemoriesResponse> {
    const { requestId, sessionId, waitIndexed, force, ...call } = options;
    const request = { memories: memories.map(memoryInput), requestId, sessionId, waitIndexed, force };
    return mapped(() => this.memory.writeMemories(request, call));
  }

  async search(query: string, namespaces: string[], options: SearchOptions & CallOptions = {}): Promise<SearchMemoriesResponse> {
    return mapped(() => this.memory.searchMemories(searchRequest(query, namespaces, options), options));
  }

  async get(id: string, options: CallOptions = {}): Promise<Memory> {
    return mapped(() => this.memory.getMemory({ id }, options));
  }

  async list(namespaces: string[], options: ListOptions & CallOptions = {}): Promise<ListMemoriesResponse> {
    const request = {
      namespaces,
      pageSize: options.pageSize ?? 0,
      pageToken: options.pageToken ?? "",
      kinds: names.kinds(options.kinds),
      types: names.types(options.types),
      tags: options.tags ?? [],
      statuses: names.statuses(options.statuses),
      subjectKey: options.subjectKey ?? "",
    };
    return mapped(() => this.memory.listMemories(request, options));
  }

  /** Forget by id; `expectedVersions` (id -> version) makes it conditional (a mismatch forgets nothing). */
  async forget(
    options: { ids: string[]; reason: string; expectedVersions?: Record<string, bigint | number>; requestId?: string } & CallOptions,
  ): Promise<ForgetMemoriesResponse> {
    const expected = Object.fromEntries(Object.entries(options.expectedVersions ?? {}).map(([id, v]) => [id, BigInt(v)]));
    const request = { ids: options.ids, reason: options.reason, expectedVersions: expected, requestId: options.requestId };
    return mapped(() => this.memory.forgetMemories(request, options));
  }

  /** A ready-to-inject block of what the agent may read about `query`, within `tokenBudget`. */
  async assembleContext(
    query: string,
    namespaces: string[],
    options: SearchOptions & { tokenBudget?: number; perGroup?: number } & CallOptions = {},
  ): Promise<AssembleContextResponse> {
    const request = { search: searchRequest(query, namespaces, options), tokenBudget: options.tokenBudget, perGroup: options.perGroup };
    return mapped(() => this.memory.assembleContext(request, options));
  }

  async history(
    id: string,
    options: { limit?: number; pageSize?: number; pageToken?: string } & CallOptions = {},
  ): Promise<GetMemoryHistoryResponse> {
    const request = { id, limit: options.limit, pageSize: options.pageSize, pageToken: options.pageToken };
    return mapped(() => this.memory.getMemoryHistory(request, options));
  }

  async lineage(id: string, options: { maxDepth?: number; maxMemories?: number } & CallOptions = {}): Promise<GetMemoryLineageResponse> {
    return mapped(() => this.memory.getMemoryLineage({ id, maxDepth: options.maxDepth, maxMemories: options.maxMemories }, options));
  }

  /** Turn a namespace's episodes into semantic memories; enum fields by name ("extractive", "session"). */
  async consolidate(
    namespace: string,
    options: {
      dryRun?: boolean;
      summariser?: string;
      groupBy?: string;
      sessionId?: string;
      tags?: string[];
      targetNamespace?: string;
      minGroupSize?: number;
      maxGroupSize?: number;
    } & CallOptions = {},
  ): Promise<ConsolidateMemoriesResponse> {
    const request = {
      namespace,
      dryRun: options.dryRun,
      summariser: options.summariser ? names.summariser(options.summariser) : 0,
      groupBy: options.groupBy ? names.grouping(options.groupBy) : 0,
      sessionId: options.sessionId,
      tags: options.tags ?? [],
      targetNamespace: options.targetNamespace,
      minGroupSize: options.minGroupSize,
      maxGroupSize: options.maxGroupSize,
    };
    return mapped(() => this.memory.consolidateMemories(request, options));
  }

  async markUsed(memoryIds: string[], options: { searchId?: string; useful?: boolean } & CallOptions = {}): Promise<MarkUsedResponse> {
    return mapped(() => this.memory.markUsed({ memoryIds, searchId: options.searchId, useful: options.useful }, options));
  }

  /** Set a key of a session's shared state to `value` (JSON); `expectedVersion` 0n: only if unset, N: only at N. */
  async sessionPut(
    namespace: string,
    sessionId: string,
    key: string,
    value: unknown,
    options: { expectedVersion?: bigint | number; ttlSeconds?: number; requestId?: string } & CallOptions = {},
  ): Promise<PutSessionStateResponse> {
    const request = {
      namespace,
      sessionId,
      key,
      valueJson: JSON.stringify(value),
      expectedVersion: options.expectedVersion === undefined ? undefined : BigInt(options.expectedVersion),
      ttl: options.ttlSeconds === undefined ? undefined : { seconds: BigInt(Math.trunc(options.ttlSeconds)) },
      requestId: options.requestId,
    };
    return mapped(() => this.sessions.putSessionState(request, options));
  }

  async sessionGet<T = unknown>(namespace: string, sessionId: string, key: string, options: CallOptions = {}): Promise<SessionValue<T>> {
    const entry = await mapped(() => this.sessions.getSessionState({ namespace, sessionId, key }, options));
    return { value: JSON.parse(entry.valueJson) as T, version: entry.version, entry };
  }

  async sessionList(
    namespace: string,
    sessionId: string,
    options: { keyPrefix?: string; keysOnly?: boolean; pageSize?: number; pageToken?: string } & CallOptions = {},
  ): Promise<ListSessionStateResponse> {
    const { keyPrefix, keysOnly, pageSize, pageToken } = options;
    return mapped(() => this.sessions.listSessionState({ namespace, sessionId, keyPrefix, keysOnly, pageSize, pageToken }, options));
  }

  async sessionDelete(
    namespace: string,
    sessionId: string,
    key: string,
    options: { expectedVersion?: bigint | number; wholeSession?: boolean } & CallOptions = {},
  ): Promise<DeleteSessionStateResponse> {
    const expectedVersion = options.expectedVersion === undefined ? undefined : BigInt(options.expectedVersion);
    const request = { namespace, sessionId, key, expectedVersion, wholeSession: options.wholeSession };
    return mapped(() => this.sessions.deleteSessionState(request, options));
  }

  /** One SubscribeChanges stream (no deadline): ends when the hub ends it or `signal` aborts. */
  async *subscribeChanges(
    namespaces: string[] = [],
    options: { cursor?: string; kinds?: string[]; types?: string[]; tags?: string[]; changes?: string[]; signal?: AbortSignal } = {},
  ): AsyncGenerator<ChangeFeedMessage> {
    const request = {
      namespaces,
      cursor: options.cursor ?? "",
      kinds: names.kinds(options.kinds),
      types: names.types(options.types),
      tags: options.tags ?? [],
      changes: names.changeKinds(options.changes),
    };
    try {
      // timeoutMs 0: no deadline; a feed stream is meant to stay open.
      yield* this.changes.subscribeChanges(request, { signal: options.signal, timeoutMs: 0 });
    } catch (err) {
      throw asMemhubError(err);
    }
  }

  /** The change feed as an async iterable that resumes after disconnects from its last cursor. */
  followChanges(namespaces: string[] = [], options: FollowOptions = {}): ChangeFollower {
    return new ChangeFollower(this, namespaces, options);
  }
}

async function mapped<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    throw asMemhubError(err);
  }
}
