"""`memhub bridge init --agent NAME`: one agent's bridge set up for an MCP client in one step.

Run on the hub's machine (it signs with the hub's local secret, exactly as
`memhub token issue` does: the same options and code). Into --out (default
~/.config/memhub/agents, made mode 0700) it writes

- NAME.jwt: the agent's hub token, mode 0600. Valid for --ttl, default 30d:
  a desktop client starts the bridge for weeks, and `token issue`'s 1h
  default would leave it failing the next morning;
- NAME.toml: the narrowing file, only with --namespaces (optional: without
  one the agent's policies alone decide);
- NAME-http.token: the bearer token an HTTP client sends to the bridge,
  mode 0600; kept when it exists, since running HTTP clients use it;

then prints the Claude Desktop (and Cursor) JSON, where that file lives,
and the settings of an HTTP client such as Dify. An existing NAME.jwt is
replaced only with --force (a rotation), and the old token's id is printed
for revoking it.

Only the standard library and the token code load here: `memhub --help`
builds this parser.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shlex
import shutil
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from memhub.cli.token_cmds import NoTokenSecret, add_issue_options, issue_from

if TYPE_CHECKING:
    from memhub.auth.issuer import IssuedToken

DEFAULT_HTTP_PORT = 8765
CLAUDE_CONFIG_FILES = (
    ("macOS", "~/Library/Application Support/Claude/claude_desktop_config.json"),
    ("Windows", r"%APPDATA%\Claude\claude_desktop_config.json"),
    ("Linux (community builds)", "~/.config/Claude/claude_desktop_config.json"),
)


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "init",
        help="write an agent's token file (and narrowing file) and print the MCP client configuration",
        description="Set up one agent's bridge: its token file (signed with the hub's local secret), an optional "
        "narrowing file, the HTTP bearer token, and the configuration to paste into Claude Desktop or an HTTP client.",
    )
    add_issue_options(p, default_ttl="30d")
    p.add_argument(
        "--namespaces",
        nargs="+",
        metavar="NAMESPACE",
        help="narrow the bridge to these namespaces and their descendants (space- or comma-separated); "
        "without it the agent's policies alone decide",
    )
    p.add_argument(
        "--hub",
        default=None,
        help="the hub address the bridge dials, HOST:PORT (default: MEMHUB_ADDRESS, else the hub `memhub serve` "
        "recorded, else 127.0.0.1:50051)",
    )
    p.add_argument("--out", type=Path, help="where to write the files (default ~/.config/memhub/agents)")
    p.add_argument(
        "--http-port", type=int, default=DEFAULT_HTTP_PORT, help=f"the port in the printed HTTP set-up ({DEFAULT_HTTP_PORT})"
    )
    p.add_argument("--force", action="store_true", help="replace an existing token (and narrowing) file: a rotation")
    p.set_defaults(func=cmd_init)


def default_out_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "memhub" / "agents"


def memhub_command() -> list[str]:
    """The absolute command that runs this memhub: a client starts it without this shell's PATH or venv."""
    # Not resolved: a venv's python is a symlink to the base interpreter, and its `memhub` sits beside the link.
    bin_dir = Path(sys.executable).parent.absolute()
    for name in ("memhub", "memhub.exe"):
        if (bin_dir / name).is_file():
            return [str(bin_dir / name)]
    found = shutil.which("memhub")
    if found:
        return [str(Path(found).absolute())]
    return [str(Path(sys.executable).absolute()), "-m", "memhub.cli.main"]


# issue_token names its parameters; a person typed these options.
_OPTION_OF = {"agent_id": "--agent", "ttl": "--ttl", "groups": "--groups", "trust": "--trust", "trust_claim": "--trust-claim"}


def cmd_init(args: argparse.Namespace) -> int:
    try:
        return _init(args)
    except ValueError as exc:
        field, sep, rest = str(exc).partition(": ")
        print(f"memhub bridge init: {_OPTION_OF.get(field, field)}{sep}{rest}", file=sys.stderr)
        return 2


def _init(args: argparse.Namespace) -> int:
    from memhub.bridge.cli import hub_address
    from memhub.bridge.narrowing import ConfigError, narrowing_from_mapping

    if not 0 < args.http_port <= 65535:
        raise ValueError(f"--http-port {args.http_port} is not a TCP port (1 to 65535)")
    namespaces = [n.strip() for item in args.namespaces or [] for n in item.split(",") if n.strip()]
    if args.namespaces is not None:
        try:
            narrowing_from_mapping({"namespaces": namespaces})
        except ConfigError as exc:
            raise ValueError(f"--{exc}") from None  # "namespaces[0]: segment 'Teams' has upper-case letters"
        if not namespaces:
            raise ValueError("--namespaces: give at least one namespace, or leave the option out")
    try:
        issued = issue_from(args)  # checks the agent id and the lifetime before anything is written
    except NoTokenSecret as exc:
        print(f"memhub bridge init: {exc}", file=sys.stderr)
        return 1

    out = (args.out or default_out_dir()).expanduser().absolute()
    token_file, config_file, http_file = out / f"{args.agent}.jwt", out / f"{args.agent}.toml", out / f"{args.agent}-http.token"
    existing = [f for f in (token_file, config_file if namespaces else None) if f is not None and f.exists()]
    if existing and not args.force:
        print(
            f"memhub bridge init: {' and '.join(map(str, existing))} already exist{'s' if len(existing) == 1 else ''}; "
            f"pass --force to replace {'it' if len(existing) == 1 else 'them'} (a rotation), or --out DIR to write elsewhere",
            file=sys.stderr,
        )
        return 1
    old_token_id = _token_id(token_file) if token_file.exists() else None

    out.mkdir(parents=True, exist_ok=True, mode=0o700)
    _write_private(token_file, issued.token + "\n")
    if namespaces:
        narrowing = f"# The namespaces agent {args.agent}'s bridge may touch (each with its descendants).\n"
        narrowing += "# It only narrows what the hub's policies allow; see docs/guides/mcp-bridge.md (Narrowing).\n"
        _write_private(config_file, narrowing + f"namespaces = {json.dumps(namespaces)}\n", mode=0o644)
    if not http_file.exists():
        _write_private(http_file, secrets.token_hex(32) + "\n")

    hub, _ = hub_address(args)
    bridge = [*memhub_command(), "bridge", "--hub", hub, "--token-file", str(token_file)]
    if namespaces:
        bridge += ["--config", str(config_file)]
    expires = issued.expires_at.replace(microsecond=0).isoformat().replace("+00:00", "Z")
    print(f"Wrote {token_file} (mode 0600): agent {args.agent}'s hub token, id {issued.jti}, valid until {expires}.")
    if namespaces:
        print(f"Wrote {config_file}: the narrowing, namespaces {', '.join(namespaces)}.")
    _print_guide(args, issued, bridge, http_file, old_token_id)
    return 0


def _print_guide(
    args: argparse.Namespace,
    issued: IssuedToken,
    bridge: list[str],
    http_file: Path,
    old_token_id: str | None,
) -> None:
    expires = issued.expires_at.replace(microsecond=0).isoformat().replace("+00:00", "Z")
    print(f"HTTP bearer token for clients of this bridge: {http_file} (mode 0600).")
    if old_token_id:
        print(
            f"Replaced token {old_token_id}; it stays valid until it expires unless you revoke it: "
            f'memhub token revoke {old_token_id} --reason "rotated" (needs an admin token).'
        )

    claude = {"mcpServers": {"memhub": {"command": bridge[0], "args": bridge[1:]}}}
    print(
        '\nClaude Desktop: put this in claude_desktop_config.json (into its "mcpServers" if it has one; Cursor\'s '
        "mcp.json takes the same block), then restart it:\n"
    )
    print(json.dumps(claude, indent=2, ensure_ascii=False))
    print()
    for system, path in CLAUDE_CONFIG_FILES:
        print(f"  {system + ':':<26}{path}")
    print(
        "The hub must be running when the client starts the bridge: the bridge checks its token and the hub at start "
        "and, if something is wrong, exits with the reason (Claude Desktop shows it in its MCP log)."
    )

    url = f"http://127.0.0.1:{args.http_port}/mcp"
    http = [*bridge, "--transport", "http", "--port", str(args.http_port), "--http-token-file", str(http_file)]
    print("\nHTTP clients (Dify: Tools > MCP > Add MCP Server (HTTP)): run the bridge as a service,\n")
    print("  " + shlex.join(http))
    print(f"\nthen give the client the server URL {url} and the header")
    print(f"  Authorization: Bearer <the contents of {http_file}>")
    print(
        "(A client in a container or on another machine needs --host 0.0.0.0 and this machine's address; "
        "see docs/guides/mcp-clients.md.)"
    )
    print(
        f"\nRotate before {expires}: run this command again with --force and restart the client. "
        f"Revoke a token at once: memhub token revoke {issued.jti} --reason ... (needs an admin token)."
    )


def _write_private(path: Path, text: str, mode: int = 0o600) -> None:
    """Write atomically with `mode` from the start: the secret is never readable by others, even for a moment."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _token_id(path: Path) -> str | None:
    """The jti of the token in `path`, read without verifying (only to name it for revocation)."""
    import jwt

    try:
        jti = jwt.decode(path.read_text(encoding="utf-8").strip(), options={"verify_signature": False}).get("jti")
    except (OSError, jwt.PyJWTError):
        return None
    return jti if isinstance(jti, str) else None
