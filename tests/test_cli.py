"""The `memhub` command as a user runs it: a real process for `serve`, client subcommands against a real hub."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import grpc
import pytest
from conftest import Stack
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from memhub.auth import issue_token, load_secret
from memhub.client import memory_input
from memhub.v1 import memory_pb2

MEMHUB = [sys.executable, "-m", "memhub.cli.main"]


def memhub(
    *args: str, stack: Stack | None = None, timeout: float = 120, token: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the CLI as a user would: the hub address as a flag, the token in MEMHUB_TOKEN."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMHUB_")}
    extra = []
    if stack is not None:
        extra = ["--hub", stack.address]
        env["MEMHUB_TOKEN"] = token or stack.token("tester")
    return subprocess.run([*MEMHUB, *args, *extra], capture_output=True, text=True, timeout=timeout, env=env)


def test_serve_starts_on_embedded_defaults_and_stops_on_sigterm(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMHUB_")}
    proc = subprocess.Popen(
        [*MEMHUB, "serve", "--data-dir", str(tmp_path / "data"), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        lines = []
        port = None
        for line in proc.stdout:  # blocks until serve prints its address
            lines.append(line)
            match = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
            if match:
                port = int(match.group(1))
                break
        assert port, f"serve printed no address: {lines} / {proc.stderr.read() if proc.poll() is not None else ''}"
        more = [proc.stdout.readline() for _ in range(9)]
        printed = "".join(lines + more)
        assert str(tmp_path / "data") in printed  # says where data lives
        channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        health = health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service="memhub.v1.MemoryService"), timeout=10
        )
        assert health.status == health_pb2.HealthCheckResponse.SERVING
        # Everything but health needs a token, reflection included; the secret was made on first start, mode 0600.
        secret_file = tmp_path / "data" / "jwt-secret"
        assert secret_file.stat().st_mode & 0o777 == 0o600
        # The client commands find this hub by the file it recorded, so the hint needs no flags.
        assert "export MEMHUB_TOKEN=$(memhub token issue --agent me --ttl 8h)" in printed
        recorded = json.loads((Path(os.environ["XDG_CONFIG_HOME"]) / "memhub" / "client.json").read_text())
        assert recorded["address"] == f"127.0.0.1:{port}" and recorded["data_dir"] == str(tmp_path / "data")
        reflect = reflection_pb2_grpc.ServerReflectionStub(channel)
        request = iter([reflection_pb2.ServerReflectionRequest(list_services="")])
        with pytest.raises(grpc.RpcError) as refused:
            next(reflect.ServerReflectionInfo(request, timeout=10))
        assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
        token = issue_token(load_secret(secret_file), agent_id="me", ttl=timedelta(minutes=5)).token
        request = iter([reflection_pb2.ServerReflectionRequest(list_services="")])
        reply = next(reflect.ServerReflectionInfo(request, timeout=10, metadata=(("authorization", f"Bearer {token}"),)))
        services = {s.name for s in reply.list_services_response.service}
        assert {"memhub.v1.MemoryService", "memhub.v1.AdminService", "grpc.health.v1.Health"} <= services
        channel.close()
        assert (tmp_path / "data" / "postgres").is_dir() and (tmp_path / "data" / "milvus-index.db").is_file()
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "shutting down" in out


def test_client_subcommands_round_trip(stack: Stack, ns: str) -> None:
    wrote = memhub(
        "write", ns, "Grace deploys on Tuesdays", "--kind", "semantic", "--type", "fact", "--tag", "deploy", "--json", stack=stack
    )
    assert wrote.returncode == 0, wrote.stderr
    memory_id = json.loads(wrote.stdout)["results"][0]["memory"]["id"]

    found = memhub("search", "when does Grace deploy?", "--ns", ns, "--explain", stack=stack)
    assert found.returncode == 0 and memory_id in found.stdout and "Grace deploys on Tuesdays" in found.stdout
    assert "dense #1" in found.stdout

    shown = memhub("get", memory_id, "--json", stack=stack)
    assert json.loads(shown.stdout)["content"] == "Grace deploys on Tuesdays"

    listed = memhub("list", "--ns", ns, stack=stack)
    assert memory_id in listed.stdout

    forgot = memhub("forget", memory_id, "--reason", "test", stack=stack)
    assert forgot.returncode == 0 and "forgot 1 memory\n" in forgot.stdout
    assert memhub("search", "Grace", "--ns", ns, stack=stack).stdout.strip() == "no memories found"


def test_client_errors_are_readable(stack: Stack) -> None:
    bad = memhub("write", "Bad/NS", "x", stack=stack)
    assert bad.returncode == 1
    assert "INVALID_ARGUMENT" in bad.stderr and "memories[0].namespace" in bad.stderr
    bad_kind = memhub("write", "ok", "x", "--kind", "dream", stack=stack)
    assert bad_kind.returncode == 2 and "unknown kind 'dream'" in bad_kind.stderr
    down = memhub("search", "q", "--ns", "x", "--hub", "127.0.0.1:1")
    assert down.returncode == 1 and "is the hub running" in down.stderr


def test_import_twice_says_what_each_line_came_to_as_the_database_holds_it(stack: Stack, ns: str, tmp_path: Path) -> None:
    """Every way a line can end, counted from the write results, checked against the database; the second run of
    the same file replays the first's request ids, so it stores nothing and says so (it used to say
    "imported 201 memories (0 already stored)")."""
    backup = "The backup job runs at 02:00 every night"
    before = stack.client.write(
        [
            memory_input(ns, backup, type="fact"),
            memory_input(ns, "Reply to the user in German", type="preference", subject_key="user/reply-language"),
        ],
        wait_indexed=True,  # the near-duplicate check compares embeddings
    ).results
    rows = [{"namespace": ns, "content": f"Server rack {i} is in hall {i + 2}", "type": "fact"} for i in range(150)]
    rows += [
        {"namespace": ns, "content": backup, "type": "fact"},  # the same text: an exact duplicate
        {"namespace": ns, "content": "the backup job runs at 02:00 every night.", "type": "fact"},  # near duplicate
        {"namespace": ns, "content": "thanks!"},  # small talk: the write filter drops it
        {"namespace": ns, "content": "Reply to the user in French", "type": "preference", "subject_key": "user/reply-language"},
    ]
    path = tmp_path / "memories.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")

    def held() -> dict[str, int]:
        memories = stack.client.list([ns], statuses=["active", "superseded"], page_size=500).memories
        return {
            "active": sum(m.status == memory_pb2.MEMORY_STATUS_ACTIVE for m in memories),
            "superseded": sum(m.status == memory_pb2.MEMORY_STATUS_SUPERSEDED for m in memories),
            "backup_seen": stack.client.get(before[0].memory.id).seen_count,
        }

    first = memhub("import", str(path), stack=stack)
    assert first.returncode == 0, first.stderr
    assert "154/154" in first.stderr  # the progress bar
    assert first.stdout == (
        "imported 154 lines: 151 new memories stored (1 replacing the older memory of their subject key); "
        "1 already stored with the same text; "
        "1 already stored in other words (near duplicates, folded into those memories); "
        "1 dropped by the write filter as small talk or chatter\n"
    )
    # 2 written before + 151 stored, of which one superseded the German preference; the backup seen 3 times.
    assert held() == {"active": 152, "superseded": 1, "backup_seen": 3}

    again = memhub("import", str(path), "--json", stack=stack)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout) == {
        "lines": 154,
        "stored": 0,
        "exact_duplicates": 0,
        "near_duplicates": 0,
        "filtered": 0,
        "already_imported": 154,
        "replaced": 0,
        "extracted": 0,
    }
    assert held() == {"active": 152, "superseded": 1, "backup_seen": 3}  # nothing was written again
    text = memhub("import", str(path), stack=stack).stdout
    assert text == (
        "imported 154 lines: 0 new memories stored; 154 already imported by an earlier run of this file (nothing written again)\n"
    )


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('{"namespace": "a", "content": "ok"}\n{"namespace": "a"\n', "line 2: not valid JSON"),
        ('{"namespace": "a", "content": "ok", "colour": "red"}\n', "line 1: unknown field(s) colour"),
        ('{"content": "no namespace"}\n', "line 1: namespace: is required"),
        ('{"namespace": "a", "content": "x", "kind": "dream"}\n', "line 1: kind: unknown kind 'dream'"),
    ],
)
def test_import_refuses_a_bad_file_before_sending_anything(stack: Stack, tmp_path: Path, content: str, expected: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    result = memhub("import", str(path), stack=stack)
    assert result.returncode == 2 and expected in result.stderr
    assert stack.client.list(["a"]).memories == []


def test_import_maps_hub_errors_to_file_lines(stack: Stack, ns: str, tmp_path: Path) -> None:
    path = tmp_path / "late-error.jsonl"
    lines = [json.dumps({"namespace": ns, "content": f"row {i}"}) for i in range(5)]
    lines.insert(3, json.dumps({"namespace": "Bad/NS", "content": "bad row"}))
    path.write_text("\n".join(lines))
    result = memhub("import", str(path), "--batch-size", "100", stack=stack)
    # Found before sending (the hub's own checks run on every line), named by its line and field.
    assert result.returncode == 2
    assert "line 4: namespace: segment 'Bad'" in result.stderr


def test_token_issue_prints_only_the_token_on_stdout(stack: Stack) -> None:
    secret_file = stack.hub.config.auth.hs256_secret_file
    issued = memhub(
        "token", "issue", "--agent", "cli-agent", "--groups", "testers,ops", "--ttl", "10m", "--secret-file", str(secret_file)
    )
    assert issued.returncode == 0, issued.stderr
    token = issued.stdout.strip()
    assert "\n" not in token and "token id" in issued.stderr
    identity = stack.hub.verifier.verify(token)
    assert identity.agent_id == "cli-agent" and identity.groups == ("testers", "ops")
    missing = memhub("token", "issue", "--agent", "x", "--secret-file", "/nonexistent/jwt-secret")
    assert missing.returncode == 1 and "no token secret at /nonexistent/jwt-secret (from --secret-file)" in missing.stderr


def test_admin_commands(fleet) -> None:  # noqa: ANN001 - the fleet fixture (shipped policies)
    env_token = fleet.token("root")
    hub_args = ["--hub", fleet.address]

    def run(*args: str, token: str = env_token) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMHUB_")} | {"MEMHUB_TOKEN": token}
        return subprocess.run([*MEMHUB, *args, *hub_args], capture_output=True, text=True, timeout=120, env=env)

    policy = run("admin", "policy")
    assert policy.returncode == 0 and "fleet.auditors-never-modify" in policy.stdout
    with fleet.client("carol") as carol, pytest.raises(grpc.RpcError):
        carol.write([memory_input("teams/support/cli", "carol tries")])
    fleet.hub.audit.flush()
    audit = run("audit", "--agent", "carol", "--decision", "deny", "--since", "1h")
    assert audit.returncode == 0 and "DENY" in audit.stdout and "teams/support/cli" in audit.stdout
    assert "fleet.auditors-never-modify" in audit.stdout
    denied = run("admin", "namespaces", token=fleet.token("carol"))
    assert denied.returncode == 1 and "PERMISSION_DENIED" in denied.stderr
    revoked = run("token", "revoke", "0123456789abcdef", "--reason", "test")
    assert revoked.returncode == 0 and "revoked 0123456789abcdef" in revoked.stdout


def test_admin_limits_command(fleet) -> None:  # noqa: ANN001 - the fleet fixture (shipped policies)
    with fleet.client("eve") as eve:
        eve.write([memory_input("agents/eve/cli-limits", "twelve bytes")])
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMHUB_")} | {"MEMHUB_TOKEN": fleet.token("root")}
    result = subprocess.run(
        [*MEMHUB, "admin", "limits", "--ns", "agents/eve/cli-limits", "--hub", fleet.address],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    assert "every agent      4 at once, 100/s (bursts 200)" in result.stdout
    assert "namespace agents/eve/cli-limits: 1 memories, 12 bytes (created by eve)" in result.stdout


def test_a_token_on_the_command_line_is_refused_and_never_echoed(stack: Stack) -> None:
    secret_looking = stack.token("tester")
    for option in ("--token", "--token-f", "--tok"):  # abbreviations used to reach --token-file
        done = memhub("search", "anything", option, secret_looking, stack=stack)
        assert done.returncode == 2, (option, done.stderr)
        assert secret_looking not in done.stderr and secret_looking not in done.stdout
    refused = memhub("search", "anything", "--token", secret_looking, stack=stack)
    assert "--token is refused" in refused.stderr and "--token-file" in refused.stderr
    bridge = subprocess.run(
        [sys.executable, "-m", "memhub.bridge.main", "--tok", "x"], capture_output=True, text=True, timeout=120
    )
    assert bridge.returncode == 2 and "unrecognized arguments: --tok" in bridge.stderr


def test_an_empty_memhub_token_is_named(stack: Stack) -> None:
    # `export MEMHUB_TOKEN=$(memhub token issue ...)` whose command failed leaves it set and empty.
    done = memhub("search", "anything", stack=stack, token=" ")
    assert done.returncode == 2 and "MEMHUB_TOKEN is set but empty" in done.stderr


def test_a_reader_that_stops_early_ends_the_listing_quietly(stack: Stack, ns: str) -> None:
    """`memhub list | head -1`: the pipe closes under the CLI; it stops with 141 (SIGPIPE's code), no traceback."""
    # About 100 KB of output, more than a pipe holds: the CLI is still writing when the reader closes, however
    # fast it renders (with 12 KB it could finish first and exit 0).
    detail = "Check the queue depth and the error rate before and after the restart. " * 28
    stack.client.write([memory_input(ns, f"Runbook step {i} restarts worker pool {i}. {detail}", type="fact") for i in range(60)])
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMHUB_")}
    env["MEMHUB_TOKEN"] = stack.token("tester")
    proc = subprocess.Popen(
        [*MEMHUB, "list", "--ns", ns, "--hub", stack.address],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline()
    proc.stdout.close()  # as head does after its line
    stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141, stderr
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr
