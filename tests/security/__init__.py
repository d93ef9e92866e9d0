"""Security tests: one module per class of attack (issue 10), so what is covered is visible at a glance.

- test_availability.py: one agent must not hurt the others: idle streams against few worker
  threads, stream caps and idle closing, per-agent call slots, rate limits per agent and per
  group, their audit and the admin view (items 1, 4).
- test_bounds.py: oversized requests (every repeated field bounded) and stored memories that
  would push a reply over the message limit (item 2).
- test_amplification.py: namespaces one agent creates cost another agent's search nothing; the
  policy scope means exactly what per-namespace decisions mean (item 3).
- test_quotas.py: namespaces per agent, memories and bytes per namespace (items 3, 4).
- test_authentication.py: failed authentication is audited in aggregate and counted; two
  authorization headers are refused (items 12, 14).
- test_page_tokens.py: edited page tokens never reach a query (item 6).
- test_wire.py: bytes that are not a request answer INVALID_ARGUMENT and log one line (item 5).
- test_poisoned_memories.py: content written to steer the models that read it: the instruction-like
  rules (English, Chinese), delimited rendering against a fake result "by bob", control characters
  in one-line fields, trust levels from the token, flags and their filters, quarantine and the
  audited admin release (item 17; the bridge's rendering in tests/test_bridge_tools.py).
- test_confidentiality.py: where a policy grants write without read, dedup, supersede and replay
  reveal and change nothing; superseding needs forget, forgetting needs read (items 7, 8, 9).
- test_data_at_rest.py: every acknowledged write and forget keeps its audit row through kill -9
  (item 11); the data directory and the stores' files are private under any umask, and a data
  directory others may access is refused (item 10).
- test_provenance.py: a hub-generated request id beside the caller-supplied trace id (item 13).
- test_telemetry_identity.py: no span names an agent or an agents/<id> namespace (item 15).
- test_embedded_postgres_recovery.py: the embedded Postgres after a killed hub, a stale pid file
  naming a reused pid, and a server that does not answer (item 16).

hubs.py starts hubs with their own settings (small limits and quotas) for these tests;
spawned_hub.py runs `memhub serve` in a process of its own, for tests that kill it.
"""
