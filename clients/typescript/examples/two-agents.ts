// Two agents on one hub through the TypeScript client, each with its own token.
//
// With the hub running (`memhub serve`, the shipped default policy: an agent owns agents/<its id>/** and
// nothing else), build the client once and run the example:
//
//   cd clients/typescript && npm ci && npm run build
//   node dist/examples/two-agents.js
//
// Each agent's token comes from ALICE_TOKEN / BOB_TOKEN, else from `memhub token issue` (on the hub's machine,
// with memhub on PATH); the hub's address from MEMHUB_ADDRESS, else 127.0.0.1:50051. alice and bob each write a
// memory and ask the same question over both their namespaces: each sees only its own. bob's write into alice's
// namespace is refused. Then alice follows her namespace's change feed while a note lands in it.
import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { MemhubClient, MemhubError } from "../src/index.js";

/** The agent's token: $<AGENT>_TOKEN, else a new one-hour token from `memhub token issue`. */
function agentToken(agent: string): string {
  const variable = `${agent.toUpperCase()}_TOKEN`;
  const given = process.env[variable]?.trim();
  if (given) {
    return given;
  }
  try {
    const issue = ["token", "issue", "--agent", agent, "--ttl", "1h"];
    return execFileSync("memhub", issue, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }).trim();
  } catch (err) {
    throw new Error(`cannot issue a token for ${agent} (${String(err)}): set ${variable} to a token issued for ${agent}`);
  }
}

const run = randomUUID().slice(0, 8); // each run its own namespaces, so the change feed shows this run's note
const aliceNs = `agents/alice/typescript-example/run-${run}`;
const bobNs = `agents/bob/typescript-example/run-${run}`;

// --8<-- [start:identity]
const alice = new MemhubClient({ token: agentToken("alice") });
const bob = new MemhubClient({ token: agentToken("bob") });
try {
  await alice.write([{ namespace: aliceNs, content: "Deploys freeze on Fridays after 3pm", type: "rule" }], { waitIndexed: true });
  await bob.write([{ namespace: bobNs, content: "The staging database is restored every Sunday night", type: "fact" }], {
    waitIndexed: true,
  });
  for (const [name, hub] of [["alice", alice], ["bob", bob]] as const) {
    const { hits } = await hub.search("when can we deploy, and when is staging restored?", [aliceNs, bobNs]);
    console.log(`[${name}] sees: ${JSON.stringify(hits.map((hit) => hit.memory?.content))}`);
  }
  try {
    await bob.write([{ namespace: aliceNs, content: "Deploys are fine on Fridays", type: "rule" }]);
  } catch (err) {
    if (!(err instanceof MemhubError)) {
      throw err;
    }
    console.log(`[bob] writing in ${aliceNs}: ${err.status}: ${err.details}`);
  }
  // --8<-- [end:identity]

  // --8<-- [start:feed]
  const releaseTrain = "The release train leaves every Tuesday at 10:00";
  const follower = alice.followChanges([aliceNs], { changes: ["written"] }); // resumes by itself after a disconnect
  let subscribed: () => void = () => {};
  const open = new Promise<void>((resolve) => (subscribed = resolve));
  const heard = (async () => {
    for await (const message of follower) {
      if (message.message.case === "heartbeat") {
        subscribed(); // the stream is open: nothing written from here on is missed
      } else if (message.message.case === "change") {
        // A stream opened without a cursor starts where the hub's changes have settled, which a write made just
        // before (the first note above) may not have reached yet: it can arrive here too. Wait for this one.
        const content = message.message.value.memory?.content;
        if (content !== releaseTrain) {
          continue;
        }
        console.log(`[alice] change feed: ${content}`);
        follower.close();
      }
    }
  })();
  await open;
  await alice.write([{ namespace: aliceNs, content: releaseTrain, type: "rule" }]);
  await heard;
  // --8<-- [end:feed]
} finally {
  alice.close();
  bob.close();
}
