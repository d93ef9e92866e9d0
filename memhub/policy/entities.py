"""The entities the hub builds for a request, as Cedar entity JSON."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from json.encoder import encode_basestring_ascii

from memhub.policy.model import HUB_UID, Principal

HUB_JSON = json.dumps(HUB_UID, separators=(",", ":"))


def entities_json(agent_id: str, groups: Sequence[str], namespaces: Iterable[str | None]) -> str:
    """The per-request entities, as Cedar JSON text (the Hub and the actions live in the base handle).

    Agent::"<id>" {id} in each Group::"<g>"; each Group; each namespace and each
    of its ancestors once: Namespace::"<path>" {path, root, owner} whose parent
    is the next namespace up, or Hub::"memhub" for a top-level one. Formatted
    by hand (json.dumps of nested dicts costs more than the rest of the path).
    """
    q = encode_basestring_ascii  # json.dumps(str) without the encoder set-up: a quoted, escaped JSON string
    a = q(agent_id)
    gs = [q(g) for g in groups]
    group_refs = ",".join(f'{{"type":"Group","id":{g}}}' for g in gs)
    parts = [f'{{"uid":{{"type":"Agent","id":{a}}},"attrs":{{"id":{a}}},"parents":[{group_refs}]}}']
    parts.extend(f'{{"uid":{{"type":"Group","id":{g}}},"attrs":{{}},"parents":[]}}' for g in gs)
    seen: set[str] = set()
    for namespace in namespaces:
        if namespace is None:
            continue
        segments = namespace.split("/")
        root = q(segments[0])
        owner = q(segments[1]) if len(segments) >= 2 and segments[0] == "agents" else '""'
        path = namespace
        for depth in range(len(segments), 0, -1):
            if path in seen:
                break
            seen.add(path)
            qp = q(path)
            if depth > 1:
                path = path[: path.rindex("/")]
                parent = f'{{"type":"Namespace","id":{q(path)}}}'
            else:
                parent = HUB_JSON
            owner_json = owner if depth >= 2 else '""'
            parts.append(
                f'{{"uid":{{"type":"Namespace","id":{qp}}},'
                f'"attrs":{{"path":{qp},"root":{root},"owner":{owner_json}}},"parents":[{parent}]}}'
            )
    return "[" + ",".join(parts) + "]"


def normalize_principal(principal: Principal) -> tuple[str, tuple[str, ...]]:
    if not isinstance(principal.agent_id, str) or not principal.agent_id:
        raise ValueError("principal.agent_id must be a non-empty string")
    if any(not isinstance(g, str) or not g for g in principal.groups):
        raise ValueError(f"principal.groups must be non-empty strings, got {principal.groups!r}")
    return principal.agent_id, tuple(sorted(set(principal.groups)))
