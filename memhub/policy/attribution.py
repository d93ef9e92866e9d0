"""Which policies made a decision over many namespaces at once (a search's or a list's readable set).

Cedar names the determining policies of one request: the permits that matched for an allow, the forbids
that matched for an explicit deny, none for the default deny. A scope decides every namespace under a
request's roots in one go (memhub/policy/scope.py), so its audit entry must name the same thing for the
set: the permits that allowed at least one readable namespace, or, when none is readable, the forbids
that took away at least one namespace a permit allowed, and nothing (the default deny) when no permit
applied. Naming every policy that *could* decide (the scope's ``policy_ids``) attributed denials to
permits that allowed nothing there (issue 24).
"""

from __future__ import annotations

from collections.abc import Sequence

from memhub.policy.model import Decision
from memhub.policy.scope import TRUE, Equals, PolicyPredicates, Predicate, Within, attributes_of


def _markers(applies: Predicate) -> tuple[str, ...] | None:
    """Substrings of the names joined as "\n<name>\n...", one of which is there exactly when ``applies`` holds for
    some name: the shapes policies usually reduce to (a subtree, an agent's own namespaces, one path). None for
    any other shape, which is then evaluated name by name."""
    if isinstance(applies, Within):
        return (f"\n{applies.root}\n", f"\n{applies.root}/")
    if isinstance(applies, Equals) and applies.value:  # owner "" (every non-agent namespace) is not a prefix
        if applies.attr == "owner":
            return (f"\nagents/{applies.value}\n", f"\nagents/{applies.value}/")
        if applies.attr == "root":
            return (f"\n{applies.value}\n", f"\n{applies.value}/")
        if applies.attr == "path":
            return (f"\n{applies.value}\n",)
    return None


def matching(policies: PolicyPredicates, names: Sequence[str]) -> tuple[str, ...]:
    """The ids of ``policies`` that apply to at least one of ``names``. A subtree or an agent's namespaces is
    looked for in the names joined into one text (a substring search in C: a search over 10,000 namespaces
    pays microseconds, not a Python loop); other shapes scan the names, each name's attributes built once,
    stopping as soon as every policy has matched."""
    if not names:
        return ()
    found: list[str] = []
    pending: list[tuple[str, Predicate]] = []
    text = ""
    for policy_id, applies in policies:
        if applies == TRUE:
            found.append(policy_id)
            continue
        markers = _markers(applies)
        if markers is None:
            pending.append((policy_id, applies))
            continue
        text = text or "\n" + "\n".join(names) + "\n"
        if any(marker in text for marker in markers):
            found.append(policy_id)
    for name in names:
        if not pending:
            break
        attrs = attributes_of(name)
        still = []
        for policy_id, applies in pending:
            if applies.evaluate(attrs):
                found.append(policy_id)
            else:
                still.append((policy_id, applies))
        pending = still
    return tuple(sorted(found))


def allowing(permits: PolicyPredicates, readable: Sequence[str]) -> tuple[str, ...]:
    """The permits behind a non-empty readable set: those that allowed at least one of its namespaces."""
    if len(permits) == 1:  # the only permit that can apply allowed them all: no scan needed
        return (permits[0][0],)
    return matching(permits, readable)


def of_decisions(decisions: Sequence[Decision]) -> tuple[tuple[str, ...], bool]:
    """(policy ids, allowed) for namespaces decided one by one: the permits of the allowed ones when any is
    allowed, else the forbids of the denied ones (none: the default deny)."""
    allowed = [d for d in decisions if d.allowed]
    chosen = allowed or list(decisions)
    return tuple(sorted({pid for d in chosen for pid in d.policy_ids})), bool(allowed)
