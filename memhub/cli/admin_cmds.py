"""`memhub audit` and `memhub admin ...`: the admin service from the shell (needs an admin token)."""

from __future__ import annotations

import argparse
from datetime import datetime, timezone

from memhub.cli.hub_connection import add_connection_args, client_from
from memhub.cli.memory_options import parse_duration
from memhub.cli.output import add_jsonl_option, output_mode, print_json, print_jsonl
from memhub.memory_text import header_value, one_line
from memhub.v1 import admin_pb2


def add_parsers(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("audit", help="read the audit log of access decisions, newest first")
    p.add_argument("--agent", dest="agent_id", default="", help="only this agent's entries")
    p.add_argument(
        "--action",
        default="",
        help="read | write | forget | consolidate | subscribe | write_unfiltered | admin | authenticate | limit | quota | "
        "release | filter | check | issue_token",
    )
    p.add_argument("--ns", dest="namespace", default="", help="this namespace and below")
    p.add_argument("--decision", choices=["allow", "deny"], help="only allowed or only denied requests")
    p.add_argument(
        "--policy",
        dest="policy_id",
        default="",
        help="only decisions this policy made, e.g. operators.auditors-read-for-operations (every operator read)",
    )
    p.add_argument("--since", type=parse_duration, help="only the last e.g. 15m, 24h, 7d")
    p.add_argument("--limit", type=int, default=50, help="entries to show (1 to 1000)")
    add_connection_args(p)
    add_jsonl_option(p, "an audit entry")
    p.set_defaults(func=cmd_audit)

    admin = sub.add_parser("admin", help="namespaces and policies of a running hub")
    asub = admin.add_subparsers(dest="admin_command", required=True, metavar="SUBCOMMAND")
    p = asub.add_parser("namespaces", help="list namespaces")
    p.add_argument("--under", default="", help="only namespaces below this one, e.g. teams/support")
    add_connection_args(p)
    add_jsonl_option(p, '{"namespace": ...}')
    p.set_defaults(func=cmd_namespaces)
    p = asub.add_parser("policy", help="show the active policy version (and reload with --reload)")
    p.add_argument("--reload", action="store_true", help="re-read the policy files now")
    add_connection_args(p)
    p.set_defaults(func=cmd_policy)
    p = asub.add_parser("limits", help="limits and quotas in force, refusals since start, who is using the replica")
    p.add_argument("--ns", dest="namespace", default="", help="also show this namespace's storage use")
    add_connection_args(p)
    p.set_defaults(func=cmd_limits)
    p = asub.add_parser(
        "release",
        help="serve quarantined memories after all (list them with: memhub list --status quarantined); audited",
    )
    p.add_argument("ids", nargs="+", help="ids of quarantined memories")
    p.add_argument("--reason", required=True, help="why they are safe to serve; recorded in the audit log")
    add_connection_args(p)
    p.set_defaults(func=cmd_release)


def cmd_audit(args: argparse.Namespace) -> int:
    request = admin_pb2.QueryAuditLogRequest(
        agent_id=args.agent_id,
        action=args.action,
        namespace=args.namespace,
        decision={"allow": admin_pb2.DECISION_ALLOW, "deny": admin_pb2.DECISION_DENY}.get(args.decision or "", 0),
        policy_id=args.policy_id,
        page_size=args.limit,
    )
    if args.since is not None:
        request.since.FromDatetime(datetime.now(timezone.utc) - args.since)
    mode = output_mode(args)
    with client_from(args) as client:
        reply = client.call_admin("QueryAuditLog", request)
    if mode == "json":
        print_json(reply)
        return 0
    if mode == "jsonl":
        print_jsonl(reply.entries)
        return 0
    for e in reply.entries:
        print(audit_line(e))
    if not reply.entries:
        print("no audit entries match")
    return 0


def audit_line(e: admin_pb2.AuditEntry) -> str:
    """One audit entry as one line of text. Details may carry caller-chosen text (a release reason, the roots of a
    scope): every value that is not a plain word is quoted with unsafe characters escaped, so no value can end the
    line or pose as another field."""
    decision = "ALLOW" if e.decision == admin_pb2.DECISION_ALLOW else "DENY "
    ids = ",".join(e.policy_ids) or ("(default deny)" if e.decision != admin_pb2.DECISION_ALLOW else "")
    detail = " ".join(f"{one_line(k)}={header_value(e.detail[k])}" for k in sorted(e.detail) if k not in ("first_at", "last_at"))
    return (
        f"{e.at.ToDatetime().isoformat(timespec='seconds')}  {decision} {header_value(e.agent_id or '-'):<16} "
        f"{one_line(e.action):<8} {header_value(e.namespace or '(hub)'):<32} {one_line(ids)}  "
        f"{one_line(e.rpc.rsplit('/', 1)[-1])}" + (f"  {detail}" if detail else "")
    )


def cmd_namespaces(args: argparse.Namespace) -> int:
    mode = output_mode(args)
    names: list[str] = []
    with client_from(args) as client:
        token = ""
        while True:
            reply = client.call_admin(
                "ListNamespaces", admin_pb2.ListNamespacesRequest(under=args.under, page_size=1000, page_token=token)
            )
            if mode == "json":  # every page in one document
                names.extend(reply.namespaces)
            elif mode == "jsonl":
                print_jsonl({"namespace": name} for name in reply.namespaces)
            else:
                for name in reply.namespaces:
                    print(name)
            token = reply.next_page_token
            if not token:
                break
    if mode == "json":
        print_json(admin_pb2.ListNamespacesResponse(namespaces=names))
    return 0


def cmd_policy(args: argparse.Namespace) -> int:
    with client_from(args) as client:
        if args.reload:
            reply = client.call_admin("ReloadPolicies", admin_pb2.ReloadPoliciesRequest())
            if args.json:  # one document: whether it changed, and the policy now in force
                print_json(reply)
                return 0
            info = reply.policy
            print("reloaded: changed" if reply.changed else "reloaded: no change")
        else:
            info = client.call_admin("GetPolicyInfo", admin_pb2.GetPolicyInfoRequest())
    if args.json:
        print_json(info)
    else:
        print(f"version {info.version}\nloaded  {info.loaded_at.ToDatetime().isoformat(timespec='seconds')}Z")
        print("files   " + ", ".join(info.files))
        print("policies " + ", ".join(info.policy_ids))
    return 0


def _limit(limit: admin_pb2.CallLimit) -> str:
    return f"{limit.concurrent or 'any'} at once, {f'{limit.rate:g}/s (bursts {limit.burst})' if limit.rate else 'no rate limit'}"


def cmd_limits(args: argparse.Namespace) -> int:
    with client_from(args) as client:
        report = client.call_admin("GetLimits", admin_pb2.GetLimitsRequest(namespace=args.namespace))
    if args.json:
        print_json(report)
        return 0
    print(f"every agent      {_limit(report.agent)}; {report.queue} may wait {report.queue_timeout_seconds:g} s")
    for name, limit in sorted(report.agents.items()):
        print(f"agent {name:<10} {_limit(limit)}")
    for name, limit in sorted(report.groups.items()):
        print(f"group {name:<10} {_limit(limit)} (shared)")
    print(f"streams          {report.streams_per_agent} per agent, closed after {report.stream_idle_timeout_seconds:g} s idle")
    print(
        f"quotas           {report.namespaces_per_agent or 'any'} namespaces per agent; per namespace "
        f"{report.namespace_max_memories or 'any'} memories, {report.namespace_max_bytes or 'any'} bytes"
    )
    for key, count in sorted(report.refusals.items()):
        print(f"refused          {key}: {count}")
    for u in report.usage:
        print(f"{u.kind:<6} {u.name:<24} running {u.running}, waiting {u.waiting}, streams {u.streams}, refused {u.refused}")
    if report.HasField("namespace"):
        n = report.namespace
        state = f"created by {n.created_by or 'unknown'}" if n.exists else "does not exist"
        print(f"namespace {n.namespace}: {n.memories} memories, {n.bytes} bytes ({state})")
    return 0


def cmd_release(args: argparse.Namespace) -> int:
    with client_from(args) as client:
        reply = client.call_admin("ReleaseMemories", admin_pb2.ReleaseMemoriesRequest(ids=args.ids, reason=args.reason))
    if args.json:
        print_json(reply)
    else:
        for mid in reply.released_ids:
            print(f"released {mid}")
    return 0
