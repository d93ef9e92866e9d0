"""Security tests: one module per class of attack (issue 10), so what is covered is visible at a glance.

- test_availability.py: one agent must not hurt the others (idle streams, per-agent caps,
  request bounds, response sizes, namespace amplification, rate limits and quotas).
- test_authentication.py: failed authentication is audited and counted; duplicate
  authorization headers are refused.
- test_page_tokens.py: edited page tokens are refused, never reach a query.
- test_wire.py: bytes that are not a request answer INVALID_ARGUMENT.
"""
