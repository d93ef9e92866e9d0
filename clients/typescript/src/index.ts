// memhub's TypeScript client: `new MemhubClient({ address, token })`, one token per agent.
export { MemhubClient, memoryInput, searchRequest } from "./client.js";
export type { ListOptions, MemhubClientOptions, MemoryInit, SearchOptions, SessionValue } from "./client.js";
export { changeName, enumValue } from "./enums.js";
export type { KindName, TypeName } from "./enums.js";
export { asMemhubError, MemhubError } from "./errors.js";
export type { VersionConflict } from "./errors.js";
export { ChangeFollower } from "./feed.js";
export type { FollowOptions } from "./feed.js";
export { tokenFromEnv, tokenFromFile } from "./token.js";
export * from "./gen/memhub/v1/changes_pb.js";
export * from "./gen/memhub/v1/memory_pb.js";
export * from "./gen/memhub/v1/session_pb.js";
export * as admin from "./gen/memhub/v1/admin_pb.js";
