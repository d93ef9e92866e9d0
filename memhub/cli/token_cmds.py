"""`memhub token issue|revoke`: local tokens for agents, and revocation through the admin API."""

from __future__ import annotations

import argparse
import os
import sys
from datetime import timezone
from pathlib import Path
from typing import TYPE_CHECKING

from memhub import client_config
from memhub.auth.config import LOCAL_SECRET_NAME
from memhub.cli.hub_connection import add_connection_args, client_from
from memhub.cli.memory_options import parse_duration
from memhub.data_dir import default_data_dir

if TYPE_CHECKING:
    from google.protobuf.timestamp_pb2 import Timestamp

    from memhub.auth.issuer import IssuedToken

# The JWT library (and the cryptography it loads), protobuf, the admin stubs and the JSON printer are imported by the
# commands that use them: `memhub bridge` builds `bridge init`'s parser from this module at every start.


def add_parser(sub: argparse._SubParsersAction) -> None:
    token = sub.add_parser("token", help="issue, list or revoke agent tokens")
    tsub = token.add_subparsers(dest="token_command", required=True, metavar="SUBCOMMAND")

    p = tsub.add_parser("issue", help="print a new HS256 token signed with the hub's local secret")
    add_issue_options(p, default_ttl="1h")
    p.add_argument("--json", action="store_true", help="print token, id and expiry as JSON")
    p.set_defaults(func=cmd_issue)

    p = tsub.add_parser("list", help="the tokens the hub knows (issued through it, or accepted), with their last use")
    p.add_argument("--agent", default="", help="only this agent's tokens")
    p.add_argument("--expired", action="store_true", help="expired ones too (kept 7 days after expiry)")
    p.add_argument("--page-size", type=int, default=0, help="tokens per page, 1 to 1000 (default 100)")
    p.add_argument("--page-token", default="", help="the next page (printed at the end of a page)")
    add_connection_args(p)
    p.set_defaults(func=cmd_list)

    p = tsub.add_parser("revoke", help="revoke a token by its id (jti); needs an admin token")
    p.add_argument("token_id", help="the token's id (jti), printed on stderr by `memhub token issue`")
    p.add_argument("--reason", required=True, help="why, kept with the revocation")
    add_connection_args(p)
    p.set_defaults(func=cmd_revoke)


def add_issue_options(p: argparse.ArgumentParser, default_ttl: str) -> None:
    """The options that say what token to sign and with which secret; `memhub bridge init` takes them too."""
    p.add_argument("--agent", required=True, help="the agent id (the token's sub)")
    p.add_argument("--groups", default="", help="comma-separated groups, e.g. support,auditors")
    p.add_argument(
        "--ttl",
        type=parse_duration,
        default=parse_duration(default_ttl),
        help=f"lifetime, e.g. 15m, 12h, 30d (default {default_ttl}; at most 366d)",
    )
    p.add_argument(
        "--trust",
        choices=["verified", "agent", "external"],
        help="the writer's trust level, shown with every memory it writes (default: none in the token, so the hub's "
        "MEMHUB_DEFAULT_TRUST applies)",
    )
    p.add_argument(
        "--trust-claim",
        default=os.environ.get("MEMHUB_JWT_TRUST_CLAIM") or "memhub_trust",
        help="claim name for --trust (MEMHUB_JWT_TRUST_CLAIM)",
    )
    p.add_argument("--data-dir", type=Path, help="the hub's data directory, where jwt-secret lives (MEMHUB_DATA_DIR)")
    p.add_argument(
        "--secret-file",
        type=Path,
        default=os.environ.get("MEMHUB_JWT_SECRET_FILE"),
        help="the HS256 secret file (MEMHUB_JWT_SECRET_FILE)",
    )
    p.add_argument(
        "--audience",
        default=os.environ.get("MEMHUB_JWT_AUDIENCE", "memhub"),
        help="the token's aud; must match the hub's MEMHUB_JWT_AUDIENCE (default memhub)",
    )
    p.add_argument(
        "--issuer",
        default=os.environ.get("MEMHUB_JWT_ISSUER", "memhub"),
        help="the token's iss; must match the hub's MEMHUB_JWT_ISSUER (default memhub)",
    )


def _secret_path(args: argparse.Namespace) -> tuple[Path, str]:
    """The HS256 secret to sign with, and where that choice came from (named when the file is missing)."""
    if args.secret_file:
        return Path(args.secret_file), "--secret-file"
    if args.data_dir:
        return args.data_dir.expanduser() / LOCAL_SECRET_NAME, "--data-dir"
    if os.environ.get("MEMHUB_DATA_DIR", "").strip():
        return Path(os.environ["MEMHUB_DATA_DIR"].strip()).expanduser() / LOCAL_SECRET_NAME, "MEMHUB_DATA_DIR"
    recorded = client_config.read()
    if recorded is not None:
        return recorded.data_dir / LOCAL_SECRET_NAME, f"the data directory `memhub serve` recorded in {recorded.path}"
    return default_data_dir() / LOCAL_SECRET_NAME, "the default data directory"


class NoTokenSecret(Exception):
    """The hub's local secret is not where the options point; the message says where it looked and why."""


def issue_from(args: argparse.Namespace) -> IssuedToken:
    """Sign the token the add_issue_options options describe; raises NoTokenSecret, or ValueError naming a bad option."""
    from memhub.auth.issuer import issue_token
    from memhub.auth.local_secret import load_secret

    path, source = _secret_path(args)
    if not path.is_file():
        raise NoTokenSecret(
            f"no token secret at {path} (from {source}); the hub creates it on its first start: "
            "start `memhub serve` first, or pass the --data-dir the hub was started with (or --secret-file)"
        )
    return issue_token(
        load_secret(path),
        agent_id=args.agent,
        groups=_groups(args),
        ttl=args.ttl,
        audience=args.audience,
        issuer=args.issuer,
        trust=args.trust,
        trust_claim=args.trust_claim,
    )


def _groups(args: argparse.Namespace) -> list[str]:
    return [g.strip() for g in args.groups.split(",") if g.strip()]


def cmd_issue(args: argparse.Namespace) -> int:
    try:
        issued = issue_from(args)
    except NoTokenSecret as exc:
        print(f"memhub token issue: {exc}", file=sys.stderr)
        return 1
    groups = _groups(args)
    if args.json:
        from memhub.cli.output import print_json

        print_json({"token": issued.token, "token_id": issued.jti, "expires_at": issued.expires_at.isoformat()})
    else:
        # Only the token on stdout, so `export MEMHUB_TOKEN=$(memhub token issue ...)` works.
        print(issued.token)
        print(
            f"token id {issued.jti}, agent {args.agent}, groups [{', '.join(groups)}], "
            f"trust {args.trust or '(hub default)'}, expires {issued.expires_at.isoformat()}",
            file=sys.stderr,
        )
    return 0


def cmd_revoke(args: argparse.Namespace) -> int:
    from memhub.cli.output import print_json
    from memhub.v1 import admin_pb2

    with client_from(args) as client:
        reply = client.call_admin("RevokeToken", admin_pb2.RevokeTokenRequest(token_id=args.token_id, reason=args.reason))
    if args.json:
        print_json({"token_id": args.token_id, "revoked": reply.revoked})
    else:
        print(f"revoked {args.token_id}" if reply.revoked else f"{args.token_id} was already revoked")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    from memhub.cli.output import print_json
    from memhub.v1 import admin_pb2

    request = admin_pb2.ListTokensRequest(
        agent_id=args.agent, include_expired=args.expired, page_size=args.page_size, page_token=args.page_token
    )
    with client_from(args) as client:
        reply = client.call_admin("ListTokens", request)
    if args.json:
        print_json(reply)
        return 0
    if not reply.tokens:
        print("no tokens known" + (f" for agent {args.agent}" if args.agent else ""))
    for r in reply.tokens:
        groups = ",".join(r.groups) or "-"
        used = _when(r.last_used_at) or "never used"
        origin = f"issued by {r.issued_by}" if r.issued_by else "signed elsewhere"
        state = " REVOKED" if r.HasField("revoked_at") else ""
        print(f"{r.token_id}  {r.agent_id}  [{groups}]  expires {_when(r.expires_at)}  last use {used}  ({origin}){state}")
    if reply.next_page_token:
        print(f"more: --page-token {reply.next_page_token}", file=sys.stderr)
    return 0


def _when(ts: Timestamp) -> str:
    return ts.ToDatetime(tzinfo=timezone.utc).isoformat(timespec="seconds") if ts.seconds or ts.nanos else ""
