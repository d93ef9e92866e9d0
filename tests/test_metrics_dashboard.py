"""The dashboard and the scrape configuration match what a running hub really exports, and where.

A real `memhub serve --metrics-port 0` process (external Postgres, scratch
database, its own Milvus Lite) gets a few calls; its /metrics is scraped and
parsed, and every metric name the Grafana dashboard's queries use must be
among the sample names it exports. The Prometheus config, the Grafana
provisioning, the compose file and the Helm chart must agree on the target,
the port and the path the hub serves.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

import grpc
import pytest
import yaml
from conftest import REPO, create_scratch_database, drop_database
from prometheus_client.parser import text_string_to_metric_families
from test_deploy_compose import environment, make_env, run_compose

from memhub.auth import issue_token, load_secret
from memhub.client import MemhubClient, memory_input
from memhub.metrics.endpoint import PATH

DASHBOARD = REPO / "deploy" / "grafana" / "dashboards" / "memhub.json"
PROMETHEUS_CONFIG = REPO / "deploy" / "prometheus" / "prometheus.yml"
GRAFANA_PROVISIONING = REPO / "deploy" / "grafana" / "provisioning"
PROMETHEUS_MADE = frozenset({"up"})
"""Series Prometheus makes itself for every target: a dashboard may use them without the hub exporting them."""

# PromQL words that are not metric names (functions are recognised by the "(" after them).
_KEYWORDS = frozenset({"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "bool", "offset"})
_STRINGS = re.compile(r'"(?:\\.|[^"\\])*"')
_SELECTORS = re.compile(r"\{[^{}]*\}")
_RANGES = re.compile(r"\[[^\]]*\]")
_LABEL_LISTS = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)")
_IDENTIFIER = re.compile(r"(?<![\w$:.])([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?")


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects (label names, functions and keywords left out)."""
    text = _STRINGS.sub('""', expr)
    text = _SELECTORS.sub(" ", text)
    text = _RANGES.sub(" ", text)
    text = _LABEL_LISTS.sub(" ", text)
    names = set()
    for match in _IDENTIFIER.finditer(text):
        word, call = match.group(1), match.group(2)
        if not call and word not in _KEYWORDS:
            names.add(word)
    return names


def dashboard_queries(dashboard: dict) -> list[str]:
    exprs = []
    for panel in dashboard["panels"]:
        exprs += [t["expr"] for t in panel.get("targets", [])]
        for inner in panel.get("panels", []):  # a collapsed row keeps its panels inside
            exprs += [t["expr"] for t in inner.get("targets", [])]
    return exprs


def unexported(dashboard: dict, exported: set[str]) -> dict[str, set[str]]:
    """Query -> the names it uses that the hub does not export."""
    out = {}
    for expr in dashboard_queries(dashboard):
        missing = metric_names(expr) - exported - PROMETHEUS_MADE
        if missing:
            out[expr] = missing
    return out


# -- a running hub -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ServedHub:
    address: str
    metrics_url: str
    token: str


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, external_pg_admin_url: str) -> Iterator[ServedHub]:
    data = tmp_path_factory.mktemp("dashboard-hub")
    url = create_scratch_database(external_pg_admin_url)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMHUB_")}
    env |= {"MEMHUB_METRICS_HOST": "127.0.0.1", "MEMHUB_METRICS_SAMPLE_S": "1", "MEMHUB_METRICS_STATUS_SAMPLE_S": "5"}
    command = [sys.executable, "-m", "memhub.cli.main", "serve", "--data-dir", str(data), "--port", "0"]
    command += ["--database-url", url, "--metrics-port", "0", "--log-level", "warning"]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env, cwd=REPO)
    try:
        address = metrics_url = None
        for line in proc.stdout:
            if match := re.search(r"listening on (\S+:\d+) \(gRPC\)", line):
                address = match.group(1)
            if match := re.search(r"^\s+metrics:\s+(http://\S+)$", line):
                metrics_url = match.group(1)
                break
        assert address and metrics_url, f"the hub did not start (exit code {proc.poll()})"
        secret = load_secret(data / "jwt-secret")
        token = issue_token(secret, agent_id="dash", groups=[], ttl=timedelta(hours=1)).token
        yield ServedHub(address, metrics_url, token)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
        drop_database(external_pg_admin_url, url)


def scrape(url: str) -> dict[str, list]:
    with urllib.request.urlopen(url, timeout=10) as reply:
        body = reply.read().decode()
    return {family.name: family.samples for family in text_string_to_metric_families(body)}


@pytest.fixture(scope="module")
def exported(served: ServedHub) -> set[str]:
    """The sample names of a scrape after writes, searches, a denial and a failed authentication."""
    assert served.metrics_url == f"http://127.0.0.1:{urlsplit(served.metrics_url).port}{PATH}"
    with MemhubClient(served.address, token=served.token) as client:
        client.write([memory_input("agents/dash/notes", "Deploys freeze on Fridays after 3pm")], wait_indexed=True)
        client.search("can I deploy on Friday?", ["agents/dash"])
        with pytest.raises(grpc.RpcError):  # the shipped policies: agents/<id>/** only
            client.write([memory_input("agents/someone-else/notes", "Writing into another agent's notes")])
    with MemhubClient(served.address, token="forged") as forged, pytest.raises(grpc.RpcError):
        forged.search("anything", ["agents/dash"])
    deadline = time.monotonic() + 60
    while True:
        families = scrape(served.metrics_url)
        if "memhub_memories" in families and "memhub_outbox_depth" in families or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    return {sample.name for samples in families.values() for sample in samples}


def test_every_metric_of_the_dashboard_is_exported(exported: set[str]) -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    queries = dashboard_queries(dashboard)
    assert len(queries) >= 25
    used = set().union(*(metric_names(q) for q in queries))
    assert {"memhub_rpc_requests_total", "memhub_rpc_duration_seconds_bucket", "memhub_index_lag_seconds"} <= used
    assert unexported(dashboard, exported) == {}


def test_the_dashboard_check_can_fail(exported: set[str]) -> None:
    broken = {"panels": [{"targets": [{"expr": 'sum(rate(memhub_rpc_request_total{code!="OK"}[5m]))'}]}]}
    assert unexported(broken, exported) == {'sum(rate(memhub_rpc_request_total{code!="OK"}[5m]))': {"memhub_rpc_request_total"}}
    assert metric_names(
        'histogram_quantile(0.99, sum by (le, method) (rate(a_bucket{job=~"$job", x="b{c}"}[$__rate_interval]))) / on(x) b'
    ) == {"a_bucket", "b"}


# -- every metric the docs name ---------------------------------------------------------------------------------

DOCUMENTS = (*sorted(REPO.glob("*.md")), *sorted((REPO / "docs").rglob("*.md")), *sorted((REPO / "deploy").rglob("*.md")))
"""The user-facing markdown: README, SECURITY, the documentation site, the deployment guides."""
# A memhub name in either spelling: Prometheus's (memhub_rpc_requests_total) or OpenTelemetry's (memhub.retrieval_log.dropped).
_DOCUMENTED_NAME = re.compile(r"(?<![\w.$/{-])(memhub(?:_[a-z0-9]+)+|memhub(?:\.[a-z0-9_]+)+)(?![\w(])")
# Words that make a line (or the header of the table a row is in) talk about metrics; other memhub_ names are
# claims, channels, collections, span attributes or modules.
_METRIC_CONTEXT = re.compile(r"metric|counter|gauge|histogram|prometheus|scrape", re.IGNORECASE)
_PROMETHEUS_SUFFIXES = ("", "_total", "_count", "_bucket", "_sum", "_info")


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def documented_metrics(text: str, source: str) -> dict[str, list[str]]:
    """The metric names ``text`` mentions, each with where ("README.md:474")."""
    found: dict[str, list[str]] = {}
    header, in_table = "", False
    for number, line in enumerate(text.splitlines(), start=1):
        row = line.lstrip().startswith("|")
        if row and not in_table:
            header = line
        in_table = row
        rest = _DOCUMENTED_NAME.sub(" ", line)
        if not (_METRIC_CONTEXT.search(rest) or (row and _METRIC_CONTEXT.search(header))):
            continue
        for name in _DOCUMENTED_NAME.findall(line):
            if "." in name and _is_module(name):  # memhub.metrics.change_feed: a module, not a metric
                continue
            found.setdefault(name, []).append(f"{source}:{number}")
    return found


def undocumented_on_scrape(documented: dict[str, list[str]], exported: set[str]) -> dict[str, list[str]]:
    """Documented names no series of the scrape carries (a dotted name as Prometheus spells it: dots become
    underscores, and a counter gains _total)."""
    missing = {}
    for name, where in documented.items():
        base = name.replace(".", "_")
        if not any(base + suffix in exported for suffix in _PROMETHEUS_SUFFIXES):
            missing[name] = where
    return missing


def generated_metrics() -> dict[str, list[str]]:
    """The names of the metrics reference the docs site generates from the registry at build time
    (scripts/docsgen/docs_metrics.py; its page holds a marker, not the names), when this checkout has it."""
    generator = REPO / "scripts" / "docsgen" / "docs_metrics.py"
    if not generator.exists():
        return {}
    sys.path.insert(0, str(generator.parent))  # it imports its siblings by name, as the mkdocs hook loads it
    try:
        docs_metrics = importlib.import_module("docs_metrics")
    finally:
        sys.path.remove(str(generator.parent))
    return {name: ["docs/reference/metrics.md (generated)"] for name in docs_metrics.metric_names()}


def test_every_metric_the_docs_name_is_on_a_scrape(exported: set[str]) -> None:
    documented = generated_metrics()
    for path in DOCUMENTS:
        for name, where in documented_metrics(path.read_text(encoding="utf-8"), str(path.relative_to(REPO))).items():
            documented.setdefault(name, []).extend(where)
    # The metrics table (hand-written in the README, or generated in the docs site) names more than 25: the
    # scan must find them, or it checks nothing.
    assert len(documented) >= 25 and "memhub_rpc_requests_total" in documented, sorted(documented)
    assert undocumented_on_scrape(documented, exported) == {}


def test_the_docs_metric_check_can_fail(exported: set[str]) -> None:
    text = (
        "| metric | type |\n|---|---|\n| `memhub_rpc_request_total` | counter |\n\n"
        "Drops are counted by the `memhub.retrieval.dropped` metric.\n"
        "The JWT claim `memhub_trust` carries the writer's trust level.\n"
        "The module `memhub.metrics.change_feed` is a metric helper.\n"
    )
    documented = documented_metrics(text, "x.md")
    assert set(documented) == {"memhub_rpc_request_total", "memhub.retrieval.dropped"}
    assert undocumented_on_scrape(documented, exported) == {
        "memhub_rpc_request_total": ["x.md:3"],
        "memhub.retrieval.dropped": ["x.md:5"],
    }
    assert undocumented_on_scrape({"memhub.security.events": ["y"], "memhub_memories": ["y"]}, exported) == {}


def test_the_dashboard_is_portable_between_compose_and_helm() -> None:
    """Its data source and job are variables, so an import into any Grafana with any scrape job works."""
    dashboard = json.loads(DASHBOARD.read_text())
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    assert "memhub_build_info" in variables["job"]["query"]["query"]
    for panel in dashboard["panels"]:
        if panel["type"] != "row":
            assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
    for expr in dashboard_queries(dashboard):
        assert 'job=~"$job"' in expr, expr
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))


# -- the scrape configuration matches the hub's settings -----------------------------------------------------


@pytest.fixture(scope="module")
def compose_model(tmp_path_factory: pytest.TempPathFactory) -> dict:
    folder = tmp_path_factory.mktemp("dashboard-compose")
    env_file, _ = make_env(folder)
    done = run_compose(env_file, "--profile", "grafana", "config", "--format", "json", home=folder)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_prometheus_scrapes_the_port_and_path_the_hub_serves(compose_model: dict) -> None:
    hub_env = environment(compose_model["services"]["hub"])
    port = int(hub_env["MEMHUB_METRICS_PORT"])
    assert hub_env["MEMHUB_METRICS_HOST"] == "0.0.0.0"  # reachable from the prometheus container
    config = yaml.safe_load(PROMETHEUS_CONFIG.read_text())
    (job,) = [j for j in config["scrape_configs"] if j["job_name"] == "memhub-hub"]
    assert job.get("metrics_path", "/metrics") == PATH
    targets = [(name, sd["port"]) for sd in job["dns_sd_configs"] for name in sd["names"]]
    assert targets == [("hub", port)]
    assert set(name for name, _ in targets) <= set(compose_model["services"])


def test_prometheus_reads_the_config_the_compose_file_mounts(compose_model: dict) -> None:
    prometheus = compose_model["services"]["prometheus"]
    flag = next(w for w in prometheus["command"] if w.startswith("--config.file="))
    mounts = {m["target"]: m for m in prometheus["volumes"]}
    mount = mounts[flag.split("=", 1)[1]]
    assert Path(mount["source"]) == PROMETHEUS_CONFIG and mount["read_only"]


def test_grafana_provisioning_points_at_prometheus_and_the_dashboard(compose_model: dict) -> None:
    services = compose_model["services"]
    datasources = yaml.safe_load((GRAFANA_PROVISIONING / "datasources" / "prometheus.yml").read_text())["datasources"]
    (source,) = datasources
    parsed = urlsplit(source["url"])
    assert parsed.hostname == "prometheus" and parsed.hostname in services
    assert parsed.port in {p["target"] for p in services["prometheus"]["ports"]}
    providers = yaml.safe_load((GRAFANA_PROVISIONING / "dashboards" / "memhub.yml").read_text())["providers"]
    (provider,) = providers
    grafana = services["grafana"]
    mounts = {m["target"]: Path(m["source"]) for m in grafana["volumes"] if m["type"] == "bind"}
    assert mounts[provider["options"]["path"]] == DASHBOARD.parent
    home = environment(grafana)["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    assert mounts[str(Path(home).parent)] / Path(home).name == DASHBOARD


def test_the_helm_chart_scrapes_the_path_the_hub_serves() -> None:
    values = yaml.safe_load((REPO / "helm" / "memhub" / "values.yaml").read_text())
    assert values["metrics"]["path"] == PATH
    schema = json.loads((REPO / "helm" / "memhub" / "values.schema.json").read_text())
    assert schema["properties"]["metrics"]["properties"]["path"]["enum"] == [PATH]
