// Search latency through the TypeScript client, for bench/bench_clients.py: sequential searches, one JSON line out.
// Env: MEMHUB_ADDRESS, MEMHUB_TOKEN, BENCH_NAMESPACE, BENCH_QUERIES (how many), BENCH_WARMUP.
import { performance } from "node:perf_hooks";
import { MemhubClient } from "../src/index.js";

const client = new MemhubClient();
const namespace = process.env.BENCH_NAMESPACE ?? "bench";
const count = Number(process.env.BENCH_QUERIES ?? "200");
const warmup = Number(process.env.BENCH_WARMUP ?? "20");
const latencies: number[] = [];
for (let i = 0; i < warmup + count; i++) {
  const started = performance.now();
  await client.search(`which team owns service ${i % 50}?`, [namespace], { topK: 5 });
  if (i >= warmup) {
    latencies.push(performance.now() - started);
  }
}
client.close();
latencies.sort((a, b) => a - b);
console.log(JSON.stringify({ count: latencies.length, latencies_ms: latencies }));
