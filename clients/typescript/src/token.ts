// The agent's token: one token per agent, read from a file or the environment, never from argv (ps shows argv).
import { readFileSync } from "node:fs";

/**
 * The JWT the hub issued for this agent: the contents of MEMHUB_TOKEN_FILE when it is set, else MEMHUB_TOKEN.
 * Throws an Error saying what to set when neither gives a token.
 */
export function tokenFromEnv(env: NodeJS.ProcessEnv = process.env): string {
  const file = env.MEMHUB_TOKEN_FILE?.trim();
  if (file) {
    return tokenFromFile(file);
  }
  const token = env.MEMHUB_TOKEN;
  if (token === undefined) {
    throw new Error("no memhub token: set MEMHUB_TOKEN_FILE to a file holding the agent's JWT, or MEMHUB_TOKEN to the JWT");
  }
  if (!token.trim()) {
    throw new Error("MEMHUB_TOKEN is set but empty (did the `memhub token issue` that set it fail? run it alone to see why)");
  }
  return token.trim();
}

/** The JWT held in `path` (surrounding whitespace dropped). */
export function tokenFromFile(path: string): string {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    const reason = err instanceof Error && "code" in err ? String(err.code) : String(err);
    throw new Error(`cannot read the memhub token file ${path}: ${reason}`);
  }
  const token = text.trim();
  if (!token) {
    throw new Error(`the memhub token file ${path} is empty; write the agent's JWT into it (memhub token issue)`);
  }
  return token;
}
