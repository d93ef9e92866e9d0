// The TypeScript client against a real hub, under node's test runner. tests/test_typescript_client.py (the
// pytest suite, so scripts/test.sh) starts the hub, issues the tokens and runs this with:
//   MEMHUB_TEST_ADDRESS  host:port of the hub
//   MEMHUB_TEST_TOKEN    a token whose agent may read and write MEMHUB_TEST_NAMESPACE
//   MEMHUB_TEST_OTHER_TOKEN  another agent's token, granted nothing there
//   MEMHUB_TEST_NAMESPACE    a namespace no other test uses
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { MemhubClient, MemhubError, MemoryStatus, tokenFromEnv } from "../src/index.js";

function required(name: string): string {
  const value = process.env[name];
  if (!value) {
    throw new Error(`${name} is not set: run these tests through pytest tests/test_typescript_client.py, which starts a hub`);
  }
  return value;
}

const address = required("MEMHUB_TEST_ADDRESS");
const ns = required("MEMHUB_TEST_NAMESPACE");
const hub = new MemhubClient({ address, token: required("MEMHUB_TEST_TOKEN") });
const other = new MemhubClient({ address, token: required("MEMHUB_TEST_OTHER_TOKEN") });
after(() => {
  hub.close();
  other.close();
});

test("write, search, get, list and forget round-trip with enum names", async () => {
  const here = `${ns}/round-trip`;
  const written = await hub.write(
    [
      { namespace: here, content: "The staging database is restored from backup every Sunday night", type: "fact" },
      { namespace: here, content: "Alerts for the billing service page the payments team first", type: "rule", tags: ["billing"] },
    ],
    { waitIndexed: true },
  );
  const [restore, alerts] = written.results.map((r) => r.memory!);
  assert.ok(restore && alerts);
  assert.equal((await hub.get(restore.id)).content, restore.content);
  const found = await hub.search("when is staging restored?", [here], { topK: 5 });
  assert.equal(found.hits[0]?.memory?.id, restore.id);
  const rules = await hub.list([here], { types: ["rule"] });
  assert.deepEqual(rules.memories.map((m) => m.id), [alerts.id]);
  const context = await hub.assembleContext("who gets paged for billing?", [here], { tokenBudget: 200 });
  assert.ok(context.memoryIds.includes(alerts.id));
  const forgotten = await hub.forget({ ids: [alerts.id], reason: "moved to the runbook", expectedVersions: { [alerts.id]: alerts.version } });
  assert.deepEqual(forgotten.forgottenIds, [alerts.id]);
  assert.equal((await hub.get(alerts.id)).status, MemoryStatus.FORGOTTEN);
});

test("two agents with different tokens see different memories", async () => {
  const here = `${ns}/private`;
  await hub.write([{ namespace: here, content: "The launch code name is Bluebird", type: "fact" }], { waitIndexed: true });
  assert.equal((await hub.search("launch code name", [here])).hits.length, 1);
  const theirs = await other.search("launch code name", [here]).then(
    (reply) => reply.hits.length,
    (err: unknown) => (err instanceof MemhubError ? err.status : err),
  );
  assert.ok(theirs === 0 || theirs === "PERMISSION_DENIED", `the other agent saw ${String(theirs)}`);
});

test("errors carry the hub's status, message and version conflict", async () => {
  await assert.rejects(hub.write([{ namespace: "Not A Namespace", content: "text that is long enough to keep" }]), (err) => {
    assert.ok(err instanceof MemhubError);
    assert.equal(err.status, "INVALID_ARGUMENT");
    assert.match(err.details, /namespace/);
    return true;
  });
  const here = `${ns}/versions`;
  let latestId = "";
  for (const language of ["English", "French"]) {
    const reply = await hub.write([{ namespace: here, content: `The customer prefers replies in ${language}`, type: "preference", subjectKey: "user/lang" }]);
    latestId = reply.results[0]!.memory!.id;
  }
  const stale = { namespace: here, content: "The customer prefers replies in Dutch", type: "preference" as const, subjectKey: "user/lang", expectedVersion: 1 };
  await assert.rejects(hub.write([stale]), (err) => {
    assert.ok(err instanceof MemhubError && err.status === "ABORTED");
    assert.equal(err.versionConflict?.currentId, latestId);
    assert.ok((err.versionConflict?.currentVersion ?? 0n) > 1n);
    return true;
  });
  await assert.rejects(hub.list([here], { types: ["factoid" as never] }), /unknown type "factoid"; choose one of event, fact/);
});

test("session state: put, get, compare-and-set and delete", async () => {
  const put = await hub.sessionPut(ns, "task-1", "plan", { steps: ["draft", "review"] }, { expectedVersion: 0 });
  const got = await hub.sessionGet<{ steps: string[] }>(ns, "task-1", "plan");
  assert.deepEqual(got.value, { steps: ["draft", "review"] });
  assert.equal(got.version, put.entry?.version);
  await assert.rejects(hub.sessionPut(ns, "task-1", "plan", { steps: [] }, { expectedVersion: got.version + 1000n }), (err) => {
    assert.ok(err instanceof MemhubError);
    assert.equal(err.sessionVersion, got.version);
    return true;
  });
  assert.equal((await hub.sessionDelete(ns, "task-1", "", { wholeSession: true })).deleted, 1);
});

test("the change feed is an async iterator that resumes from its cursor", async () => {
  const here = `${ns}/feed`;
  const follower = hub.followChanges([here]);
  const seen: string[] = [];
  const texts = ["The first finding is that checkout slowed on Monday", "The second finding is that Redis was removed"];
  const iterator = follower[Symbol.asyncIterator]();
  const first = await iterator.next();
  assert.equal(first.value?.message.case, "heartbeat");
  for (const text of texts) {
    await hub.write([{ namespace: here, content: text, type: "fact" }]);
  }
  while (seen.length < texts.length) {
    const { value } = await iterator.next();
    if (value?.message.case === "change") {
      seen.push(value.message.value.memory?.content ?? "");
    }
  }
  follower.close();
  assert.deepEqual(seen, texts);
  assert.equal((await iterator.next()).done, true);
  const later = "The third finding is that rolling back fixed it";
  await hub.write([{ namespace: here, content: later, type: "fact" }]);
  for await (const message of hub.followChanges([here], { cursor: follower.cursor })) {
    if (message.message.case === "change") {
      assert.equal(message.message.value.memory?.content, later);
      break;
    }
  }
});

test("the token comes from MEMHUB_TOKEN_FILE, else MEMHUB_TOKEN, with errors that say what to set", () => {
  const file = join(mkdtempSync(join(tmpdir(), "memhub-token-")), "token");
  writeFileSync(file, "  from-the-file\n");
  assert.equal(tokenFromEnv({ MEMHUB_TOKEN_FILE: file, MEMHUB_TOKEN: "from-env" }), "from-the-file");
  assert.equal(tokenFromEnv({ MEMHUB_TOKEN: " from-env " }), "from-env");
  assert.throws(() => tokenFromEnv({}), /set MEMHUB_TOKEN_FILE/);
  assert.throws(() => tokenFromEnv({ MEMHUB_TOKEN: " " }), /MEMHUB_TOKEN is set but empty/);
  assert.throws(() => tokenFromEnv({ MEMHUB_TOKEN_FILE: `${file}.missing` }), /cannot read the memhub token file .*ENOENT/);
});
