"""Cedar policies for memhub: who may read, write, forget, consolidate, subscribe or administer what.

- `PolicyEngine` loads and validates a policy directory and decides requests
  (with a decision cache keyed by the policy version);
- `PolicyStore` holds the current engine and reloads it when the files change
  (an invalid edit keeps the previous engine);
- `memhub policy validate|test` (memhub/policy/cli.py) check policies in CI.
"""

from memhub.policy.engine import PolicyEngine
from memhub.policy.model import Decision, PolicyError, PolicyInfo, Principal
from memhub.policy.store import PolicyStore, ReloadResult

__all__ = [
    "Decision",
    "PolicyEngine",
    "PolicyError",
    "PolicyInfo",
    "PolicyStore",
    "Principal",
    "ReloadResult",
]
