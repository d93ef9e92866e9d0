"""The bridge's configuration: the narrowing file, secrets from files or the environment (never argv), TLS.

No hub is needed here except for the TLS test, which talks to a real gRPC
server with a throwaway certificate.
"""

from __future__ import annotations

import datetime
import os
import subprocess
import sys
from concurrent import futures
from pathlib import Path

import grpc
import jwt
import pytest
from conftest import REPO
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from grpc_health.v1 import health, health_pb2_grpc

from memhub import client_config
from memhub.bridge import BridgeSettings, ConfigError, HubTls, Narrowing, SettingsError, load_narrowing
from memhub.bridge.cli import settings_from_args
from memhub.bridge.hub_client import BridgeHubClient
from memhub.bridge.main import build_parser


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "narrowing.toml"
    path.write_text(text)
    return path


# -- the narrowing file -----------------------------------------------------------------


def test_a_full_narrowing_file(tmp_path: Path) -> None:
    narrowing = load_narrowing(
        write(
            tmp_path,
            'namespaces = ["teams/support", "agents/alice"]\n'
            'default_namespace = "agents/alice/notes"\n'
            'tools = ["search_memories", "write_memory"]\n',
        )
    )
    assert narrowing == Narrowing(("teams/support", "agents/alice"), "agents/alice/notes", ("search_memories", "write_memory"))
    assert narrowing.allows("teams/support/kb") and narrowing.allows("agents/alice")
    assert not narrowing.allows("teams/support-archive") and not narrowing.allows("teams")


def test_no_file_and_an_empty_file_narrow_nothing(tmp_path: Path) -> None:
    assert load_narrowing(None) == load_narrowing(write(tmp_path, "")) == Narrowing()
    assert Narrowing().allows("anything/at/all")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            'namespace = ["a"]',
            "unknown key 'namespace'; the keys are namespaces, default_namespace, tools (did you mean 'namespaces'?)",
        ),
        ('namespaces = "teams/support"', "namespaces: must be a list"),
        ("namespaces = []", "namespaces: is empty"),
        ('namespaces = ["teams/Support"]', "namespaces[0]: segment 'Support' has upper-case letters"),
        ('namespaces = ["ok", "a//b"]', "namespaces[1]: 'a//b' has an empty segment"),
        (
            'namespaces = ["teams/support"]\ndefault_namespace = "agents/alice"',
            "default_namespace: 'agents/alice' is not inside namespaces",
        ),
        ("default_namespace = 3", "default_namespace: must be a string"),
        ('default_namespace = "../x"', "default_namespace: '../x' has a '..' segment"),
        ('tools = ["write_memory", "consolidate"]', "tools[1]: unknown tool 'consolidate'; choose from write_memory"),
        ("tools = []", "tools: is empty"),
        ("namespaces = [", "not valid TOML"),
    ],
)
def test_a_wrong_narrowing_file_is_refused_naming_the_key(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as exc:
        load_narrowing(path)
    assert str(exc.value).startswith(f"{path}: ")
    assert message in str(exc.value)


def test_a_missing_narrowing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read the narrowing file"):
        load_narrowing(tmp_path / "nope.toml")


# -- settings and secrets ---------------------------------------------------------------------


def token_for(agent: str) -> str:
    return jwt.encode({"sub": agent}, "k" * 32, algorithm="HS256")


def settings(argv: list[str], env: dict[str, str]) -> BridgeSettings:
    return settings_from_args(build_parser().parse_args(argv), env)


def test_the_token_comes_from_a_file_or_the_environment(tmp_path: Path) -> None:
    assert settings([], {"MEMHUB_TOKEN": token_for("alice")}).agent_id == "alice"
    token_file = tmp_path / "alice.jwt"
    token_file.write_text(token_for("bob") + "\n")
    token_file.chmod(0o600)
    s = settings(["--token-file", str(token_file)], {"MEMHUB_TOKEN": token_for("alice")})
    assert s.agent_id == "bob"  # the explicit file wins
    assert s.token not in repr(s)  # never printed with the settings
    with pytest.raises(SettingsError, match="no hub token: set MEMHUB_TOKEN or pass --token-file"):
        settings([], {})
    with pytest.raises(SettingsError, match="cannot read the hub token file"):
        settings(["--token-file", str(tmp_path / "missing")], {})


@pytest.mark.parametrize("flag", ["--token", "--http-token"])
def test_secrets_on_the_command_line_are_refused_without_echoing_them(flag: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        build_parser().parse_args([flag, "s3cret-value"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"{flag} is refused: command-line arguments are visible to every user" in err
    assert "s3cret-value" not in err


def test_memhub_bridge_subcommand_refuses_token_flag_too() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "memhub.cli.main", "bridge", "--token=s3cret-value"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={k: v for k, v in os.environ.items() if not k.startswith("MEMHUB_")},
        timeout=60,
    )
    assert proc.returncode == 2 and "--token is refused" in proc.stderr and "s3cret-value" not in proc.stderr


def test_http_needs_its_own_long_enough_bearer_token(tmp_path: Path) -> None:
    env = {"MEMHUB_TOKEN": token_for("alice")}
    with pytest.raises(SettingsError, match="streamable HTTP needs a bearer token"):
        settings(["--transport", "http"], env)
    with pytest.raises(SettingsError, match="use at least 16"):
        settings(["--transport", "http"], env | {"MEMHUB_BRIDGE_HTTP_TOKEN": "short"})
    http_file = tmp_path / "http-token"
    http_file.write_text("x" * 40)
    s = settings(["--transport", "http", "--http-token-file", str(http_file), "--allow-origin", "https://app.example.com"], env)
    assert s.http_token == "x" * 40 and s.host == "127.0.0.1"
    assert "https://app.example.com" in s.allowed_origins and "http://localhost:*" in s.allowed_origins


def test_default_namespace_follows_the_narrowing_then_the_agent(tmp_path: Path) -> None:
    alice = token_for("alice")
    assert BridgeSettings(hub_address="h:1", token=alice).default_namespace == "agents/alice"
    assert BridgeSettings(hub_address="h:1", token=alice, narrowing=Narrowing(("agents",))).default_namespace == "agents/alice"
    assert BridgeSettings(hub_address="h:1", token=alice, narrowing=Narrowing(("teams/x",))).default_namespace == "teams/x"
    two = Narrowing(("teams/x", "teams/y"))
    assert BridgeSettings(hub_address="h:1", token=alice, narrowing=two).default_namespace is None
    assert BridgeSettings(hub_address="h:1", token="opaque").default_namespace is None


# -- TLS to the hub ---------------------------------------------------------------------------------


def _self_signed(tmp_path: Path) -> tuple[Path, bytes, bytes]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_pem = cert.public_bytes(serialization.Encoding.PEM)
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    ca = tmp_path / "hub-ca.pem"
    ca.write_bytes(cert_pem)
    return ca, cert_pem, key_pem


def test_tls_to_the_hub_with_a_ca_file(tmp_path: Path) -> None:
    ca, cert_pem, key_pem = _self_signed(tmp_path)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    health_pb2_grpc.add_HealthServicer_to_server(health.HealthServicer(), server)
    port = server.add_secure_port("localhost:0", grpc.ssl_server_credentials([(key_pem, cert_pem)]))
    server.start()
    try:
        with BridgeHubClient(f"localhost:{port}", token="t", tls=HubTls(ca_file=ca)) as tls_client:
            assert tls_client.healthy(timeout_s=10)
        with BridgeHubClient(f"localhost:{port}", token="t") as plaintext:
            assert not plaintext.healthy(timeout_s=2)  # a TLS hub does not answer plaintext
        s = settings(["--hub", f"localhost:{port}", "--hub-ca", str(ca)], {"MEMHUB_TOKEN": token_for("a")})
        assert s.hub_tls == HubTls(ca_file=ca)  # --hub-ca implies TLS
    finally:
        server.stop(None)
    with pytest.raises(ValueError, match="cannot read the hub CA file"):
        HubTls(ca_file=tmp_path / "missing.pem").credentials()


def test_the_hub_address_comes_from_the_flag_the_environment_what_serve_recorded_or_the_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = {"MEMHUB_TOKEN": token_for("alice")}
    monkeypatch.setenv("MEMHUB_CLIENT_CONFIG", str(tmp_path / "client.json"))
    assert settings([], env).hub_address == "127.0.0.1:50051"  # nothing recorded
    client_config.write("127.0.0.1:50999", tmp_path / "data", pid=os.getpid())  # as `memhub serve --port 50999` does
    assert settings([], env).hub_address == "127.0.0.1:50999"
    assert settings([], env | {"MEMHUB_ADDRESS": "hub.internal:50051"}).hub_address == "hub.internal:50051"
    assert settings(["--hub", "10.0.0.5:1234"], env | {"MEMHUB_ADDRESS": "hub.internal:50051"}).hub_address == "10.0.0.5:1234"
    with pytest.raises(SettingsError, match="--startup-wait -1.0 must be 0 or more seconds"):
        settings(["--startup-wait", "-1"], env)
