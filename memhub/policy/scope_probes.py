"""Where to compare a scope's translation with real Cedar decisions (memhub/policy/engine.py ``_verify``).

A translated predicate is trusted only after it agrees with Cedar on the namespaces at its boundaries:
each side of every root, path, owner value and like pattern it names, plus the agent's own subtree.
"""

from __future__ import annotations

from memhub.policy.scope import WILDCARD, AllOf, AnyOf, Equals, Like, Not, Predicate, Within


def probe_namespaces(p: Predicate, agent_id: str, probe: str = "zz-probe") -> set[str]:
    """Namespaces on each side of every boundary the predicate draws, plus the agent's own subtree.

    For each root or path it names: the namespace, its ancestors and a child; for each root or owner
    value: that top-level namespace and agents/<value>, with a child; for each like pattern: its
    wildcards filled. Some may not be valid namespace paths: the caller filters them.
    """
    names = {probe, f"{probe}/{probe}", "agents", f"agents/{probe}", f"agents/{agent_id}", f"agents/{agent_id}/{probe}"}

    def around(path: str) -> None:
        segments = path.split("/")
        names.update("/".join(segments[:i]) for i in range(1, len(segments) + 1))
        names.add(f"{path}/{probe}")

    def visit(q: Predicate) -> None:
        if isinstance(q, Within):
            around(q.root)
        elif isinstance(q, Equals):
            for value in filter(None, (q.value,)):
                around(value)
                around(f"agents/{value}")
        elif isinstance(q, Like):
            for fill in ("", probe, f"{probe}/{probe}"):
                text = "".join(fill if part is WILDCARD else part for part in q.pattern)
                if text:
                    around(text)
                    around(f"agents/{text}")
        elif isinstance(q, Not):
            visit(q.arg)
        elif isinstance(q, AllOf | AnyOf):
            for part in q.parts:
                visit(part)

    visit(p)
    return names
