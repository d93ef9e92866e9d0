// Enum arguments by their short lower-case names ("episodic", "fact"), as the Python client and the CLI take them.
import type { DescEnum } from "@bufbuild/protobuf";
import { ChangeKindSchema } from "./gen/memhub/v1/changes_pb.js";
import {
  ConsolidationGroupingSchema,
  MemoryFlagSchema,
  MemoryKindSchema,
  MemoryStatusSchema,
  MemoryTypeSchema,
  RetrievalChannelSchema,
  SummariserSchema,
} from "./gen/memhub/v1/memory_pb.js";

export type KindName = "episodic" | "semantic" | "procedural";
export type TypeName = "event" | "fact" | "preference" | "correction" | "rule" | "lesson" | "outcome" | "note";

/** The value of `name` in `schema` (e.g. "fact" in MemoryType); throws naming the choices when there is none. */
export function enumValue(schema: DescEnum, name: string | number, what: string): number {
  if (typeof name === "number") {
    return name;
  }
  const wanted = `${schema.sharedPrefix ?? ""}${name}`.toUpperCase();
  const found = schema.values.find((v) => v.name === wanted || v.localName.toUpperCase() === name.toUpperCase());
  if (found === undefined || found.number === 0) {
    const choices = schema.values.filter((v) => v.number !== 0).map((v) => v.localName.toLowerCase());
    throw new RangeError(`unknown ${what} ${JSON.stringify(name)}; choose one of ${choices.join(", ")}`);
  }
  return found.number;
}

const many = (schema: DescEnum, what: string) => (names: readonly (string | number)[] | undefined) =>
  (names ?? []).map((n) => enumValue(schema, n, what));

export const kinds = many(MemoryKindSchema, "kind");
export const types = many(MemoryTypeSchema, "type");
export const statuses = many(MemoryStatusSchema, "status");
export const flags = many(MemoryFlagSchema, "flag");
export const channels = many(RetrievalChannelSchema, "channel");
export const changeKinds = many(ChangeKindSchema, "change");
export const kind = (name: string | number) => enumValue(MemoryKindSchema, name, "kind");
export const type = (name: string | number) => enumValue(MemoryTypeSchema, name, "type");
export const grouping = (name: string | number) => enumValue(ConsolidationGroupingSchema, name, "grouping");
export const summariser = (name: string | number) => enumValue(SummariserSchema, name, "summariser");

/** "CHANGE_KIND_WRITTEN" -> "written", for logs. */
export function changeName(value: number): string {
  return ChangeKindSchema.values.find((v) => v.number === value)?.localName.toLowerCase() ?? String(value);
}
