"""The Helm chart (helm/memhub), checked offline: no cluster, no engine, no network.

- Every values file under helm/memhub/ci/ renders with helm-python-sdk (Helm 4
  compiled in) and every manifest validates against the Kubernetes JSON
  schemas of kubernetes-validate (strict: unknown fields fail) for the oldest
  Kubernetes the chart supports (1.30) and the newest the package knows.
- `helm lint` reports no errors (its one expected warning: the bundled Milvus
  and PostgreSQL charts are not downloaded, `helm dependency build` needs the
  network); yamllint passes on values.yaml and the CI values files.
- Chart.lock pins exactly the versions Chart.yaml declares, with the digest
  Helm's resolver computes over both: checked here and by Helm itself, whose
  `dependency build` compares the digest before it fetches anything.
- values.schema.json rejects wrong types and unknown keys; a missing existing
  Secret fails rendering with the chart's own message.
- Structure: hub replicas, gRPC probes, PDB/HPA, no Secret objects and no
  literal secret values, the shipped default policy in the ConfigMap, one
  bridge per list entry, service names instead of localhost, and every
  cross-reference between objects (Service selectors, target ports, volumes,
  Ingress backends, HPA/PDB targets) resolving.

Each structural check is a plain function; test_checks_catch_broken_manifests
feeds each one a deliberately broken render to show it can fail.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
import shutil
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import helm_python as helm
import kubernetes_validate
import pytest
import yaml
from yamllint import config as yamllint_config
from yamllint import linter as yamllint_linter

REPO = Path(__file__).resolve().parent.parent
CHART = REPO / "helm" / "memhub"
CI_FILES = sorted((CHART / "ci").glob("*-values.yaml"))
YAMLLINT_CONFIG = REPO / "helm" / ".yamllint"
SHIPPED_POLICIES = REPO / "policies"

RELEASE = "memhub"
NAMESPACE = "memhub"
HUB = "memhub-hub"
HUB_PORT = 50051
# The oldest Kubernetes the chart supports (Chart.yaml kubeVersion) and the newest kubernetes-validate knows.
KUBE_VERSIONS = ["1.30.0", kubernetes_validate.utils.latest_version()]
# Custom resources have no schema in kubernetes-validate; they are checked by check_service_monitor instead.
CRD_KINDS = {("monitoring.coreos.com/v1", "ServiceMonitor")}
# helm lint's only expected finding above "info": the dependency charts cannot be fetched offline.
MISSING_DEPENDENCIES = "chart directory is missing these dependencies: milvus,postgresql"
LOOPBACK = ("localhost", "127.0.0.1", "[::1]", "0.0.0.0:")
# Environment variables whose name says they hold a secret may only come from a Secret (valueFrom), never a
# literal; *_FILE variables hold a path to a mounted Secret instead.
SECRET_ENV_WORDS = ("TOKEN", "PASSWORD", "SECRET", "API_KEY", "DATABASE_URL")

Manifest = dict[str, Any]


# --------------------------------------------------------------------------- rendering


@pytest.fixture(scope="module")
def chart() -> helm.Chart:
    with helm.Chart.load(CHART) as loaded:
        yield loaded


def ci_values(name: str) -> dict[str, Any]:
    return yaml.safe_load((CHART / "ci" / f"{name}-values.yaml").read_text(encoding="utf-8")) or {}


def merged(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """`base` with `override` merged in (maps deeply, everything else replaced): a second -f file."""
    out = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merged(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def render(chart: helm.Chart, values: dict[str, Any], *, release: str = RELEASE) -> list[Manifest]:
    """Every manifest the chart renders (NOTES.txt left out), parsed."""
    out = chart.render(values, name=release, namespace=NAMESPACE)
    docs: list[Manifest] = []
    for path, text in sorted(out.items()):
        if path.endswith("NOTES.txt"):
            continue
        docs.extend(doc for doc in yaml.safe_load_all(text) if doc)
    return docs


def notes(chart: helm.Chart, values: dict[str, Any]) -> str:
    out = chart.render(values, name=RELEASE, namespace=NAMESPACE)
    return next(text for path, text in out.items() if path.endswith("NOTES.txt"))


def of_kind(docs: list[Manifest], kind: str) -> list[Manifest]:
    return [d for d in docs if d["kind"] == kind]


def named(docs: list[Manifest], kind: str, name: str) -> Manifest:
    found = [d for d in of_kind(docs, kind) if d["metadata"]["name"] == name]
    assert len(found) == 1, f"expected one {kind} {name}, found {len(found)}"
    return found[0]


def hub_deployment(docs: list[Manifest]) -> Manifest:
    found = [d for d in of_kind(docs, "Deployment") if d["metadata"]["labels"].get("app.kubernetes.io/component") == "hub"]
    assert len(found) == 1, f"expected one hub Deployment, found {len(found)}"
    return found[0]


def bridge_deployments(docs: list[Manifest]) -> list[Manifest]:
    return [d for d in of_kind(docs, "Deployment") if d["metadata"]["labels"].get("app.kubernetes.io/component") == "bridge"]


def container(deployment: Manifest, name: str | None = None) -> Manifest:
    containers = deployment["spec"]["template"]["spec"]["containers"]
    return containers[0] if name is None else next(c for c in containers if c["name"] == name)


def env_of(c: Manifest) -> dict[str, Manifest]:
    return {e["name"]: e for e in c.get("env", [])}


# --------------------------------------------------------------------------- checks (each raises AssertionError)


def check_kubernetes_schema(doc: Manifest, version: str) -> None:
    """Strict validation against the Kubernetes OpenAPI schema of `version` (custom resources excluded)."""
    if (doc["apiVersion"], doc["kind"]) in CRD_KINDS:
        return
    where = f"{doc['kind']}/{doc['metadata'].get('name')}"
    try:
        kubernetes_validate.validate(doc, version, strict=True)
    except kubernetes_validate.ValidationError as exc:
        path = "/".join(str(p) for p in exc.path)
        raise AssertionError(f"{where} is invalid for Kubernetes {version} at {path}: {exc.message}") from None
    except kubernetes_validate.SchemaNotFoundError as exc:
        raise AssertionError(f"{where}: {exc.message}") from None


def check_service_monitor(docs: list[Manifest]) -> None:
    """A ServiceMonitor selects the hub Service and scrapes a port that Service has."""
    for sm in of_kind(docs, "ServiceMonitor"):
        assert sm["apiVersion"] == "monitoring.coreos.com/v1"
        selector = sm["spec"]["selector"]["matchLabels"]
        services = [s for s in of_kind(docs, "Service") if selector.items() <= s["metadata"]["labels"].items()]
        assert services, f"ServiceMonitor {sm['metadata']['name']} selects no Service"
        port_names = {p["name"] for s in services for p in s["spec"]["ports"]}
        for endpoint in sm["spec"]["endpoints"]:
            assert endpoint["port"] in port_names, f"ServiceMonitor scrapes port {endpoint['port']!r}; Services have {port_names}"
            assert endpoint["path"].startswith("/")


def check_no_secret_values(docs: list[Manifest]) -> None:
    """The chart creates no Secret, and secret-bearing variables are only ever read from Secrets."""
    secrets = [d["metadata"]["name"] for d in of_kind(docs, "Secret")]
    assert not secrets, f"the chart must not create Secrets (it renders {secrets})"
    for d in of_kind(docs, "Deployment"):
        for c in d["spec"]["template"]["spec"]["containers"]:
            for name, entry in env_of(c).items():
                if name.endswith("_FILE") or not any(word in name for word in SECRET_ENV_WORDS):
                    continue
                if name == "MEMHUB_DATABASE_URL" and "value" in entry:
                    # The bundled PostgreSQL's URL carries no password (libpq reads PGPASSWORD from a Secret).
                    assert "@" in entry["value"] and ":" not in entry["value"].split("://", 1)[1].split("@", 1)[0], (
                        f"{d['metadata']['name']}: MEMHUB_DATABASE_URL has a password in it"
                    )
                    continue
                assert "valueFrom" in entry and "secretKeyRef" in entry["valueFrom"], (
                    f"{d['metadata']['name']}: {name} must come from a Secret (valueFrom.secretKeyRef), not a literal"
                )
        for arg in container(d).get("args", []):
            assert str(arg).split("=", 1)[0] not in ("--token", "--http-token"), (
                f"{d['metadata']['name']}: a secret as an argument"
            )


def check_hub_replicas(docs: list[Manifest], minimum: int = 2) -> None:
    """The hub runs several replicas: a fixed count, or an HPA whose minimum is at least `minimum`."""
    deployment = hub_deployment(docs)
    hpas = [
        h
        for h in of_kind(docs, "HorizontalPodAutoscaler")
        if h["spec"]["scaleTargetRef"]["name"] == deployment["metadata"]["name"]
    ]
    if hpas:
        assert "replicas" not in deployment["spec"], "with an HPA the Deployment must leave replicas to it"
        assert hpas[0]["spec"]["minReplicas"] >= minimum, f"HPA minReplicas {hpas[0]['spec']['minReplicas']} < {minimum}"
    else:
        assert deployment["spec"].get("replicas", 1) >= minimum, (
            f"hub replicas {deployment['spec'].get('replicas', 1)} < {minimum}"
        )


def check_grpc_probes(docs: list[Manifest]) -> None:
    """Native gRPC liveness, readiness and startup probes on the hub's gRPC container port."""
    c = container(hub_deployment(docs), "hub")
    grpc_ports = {p["containerPort"] for p in c["ports"] if p["name"] == "grpc"}
    assert grpc_ports == {HUB_PORT}, f"the hub's grpc container port is {grpc_ports}"
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        assert probe in c, f"hub has no {probe}"
        assert "grpc" in c[probe], f"hub {probe} is not a gRPC probe: {c[probe]}"
        assert c[probe]["grpc"]["port"] == HUB_PORT, f"hub {probe} checks port {c[probe]['grpc']['port']}"
    assert c["readinessProbe"]["grpc"].get("service") == "memhub.v1.MemoryService"


def check_hardened(docs: list[Manifest]) -> None:
    """Non-root, read-only root filesystem, no privilege escalation; /tmp (and the hub's /data) are emptyDirs."""
    for d in of_kind(docs, "Deployment"):
        name = d["metadata"]["name"]
        pod = d["spec"]["template"]["spec"]
        assert pod["securityContext"].get("runAsNonRoot") is True, f"{name}: pod may run as root"
        empty_dirs = {v["name"] for v in pod.get("volumes", []) if "emptyDir" in v}
        for c in pod["containers"]:
            sc = c.get("securityContext", {})
            assert sc.get("readOnlyRootFilesystem") is True, f"{name}: root filesystem is writable"
            assert sc.get("allowPrivilegeEscalation") is False, f"{name}: privilege escalation allowed"
            assert "ALL" in sc.get("capabilities", {}).get("drop", []), f"{name}: capabilities not dropped"
            mounts = {m["mountPath"]: m["name"] for m in c.get("volumeMounts", [])}
            needed = ["/tmp", "/data"] if name == HUB else ["/tmp"]
            for path in needed:
                assert mounts.get(path) in empty_dirs, f"{name}: {path} is not an emptyDir mount"


def check_policy_configmap(docs: list[Manifest]) -> None:
    """The hub mounts a ConfigMap holding the shipped schema, default and operators policies, byte for byte (the
    operators' grants work the same on Kubernetes as from the repository)."""
    deployment = hub_deployment(docs)
    pod = deployment["spec"]["template"]["spec"]
    env = env_of(container(deployment, "hub"))
    policy_dir = env["MEMHUB_POLICY_DIR"]["value"]
    mount = next(m for m in container(deployment, "hub")["volumeMounts"] if m["mountPath"] == policy_dir)
    assert "subPath" not in mount, "a subPath mount never sees ConfigMap updates: mount the whole directory"
    volume = next(v for v in pod["volumes"] if v["name"] == mount["name"])
    cm = named(docs, "ConfigMap", volume["configMap"]["name"])
    for file in ("default.cedar", "operators.cedar", "schema.cedarschema"):
        shipped = (SHIPPED_POLICIES / file).read_text(encoding="utf-8")
        assert cm["data"].get(file) == shipped, (
            f"ConfigMap {file} differs from policies/{file} (copy it to helm/memhub/files/policies/)"
        )


def check_bridges(docs: list[Manifest], entries: list[dict[str, Any]]) -> None:
    """One Deployment, Service (and narrowing ConfigMap when narrowed) per bridge entry, with /healthz readiness."""
    deployments = {d["metadata"]["labels"]["memhub.io/bridge"]: d for d in bridge_deployments(docs)}
    assert sorted(deployments) == sorted(e["name"] for e in entries), f"bridges rendered: {sorted(deployments)}"
    for entry in entries:
        d = deployments[entry["name"]]
        c = container(d)
        assert c["args"][0] == "bridge" and c["args"][c["args"].index("--transport") + 1] == "http"
        probe = c["readinessProbe"]["httpGet"]
        assert probe["path"] == "/healthz", f"bridge {entry['name']} readiness is {probe}"
        service = named(docs, "Service", d["metadata"]["name"])
        assert service["spec"]["selector"].items() <= d["spec"]["template"]["metadata"]["labels"].items()
        env = env_of(c)
        secrets = {
            s["secret"]["name"]
            for v in d["spec"]["template"]["spec"]["volumes"]
            if "projected" in v
            for s in v["projected"]["sources"]
        }
        assert {entry["agentToken"]["existingSecret"], entry["httpToken"]["existingSecret"]} == secrets
        narrowing = entry.get("narrowing")
        if narrowing:
            cm = named(docs, "ConfigMap", d["metadata"]["name"])
            parsed = tomllib.loads(cm["data"]["narrowing.toml"])
            expected = {
                "namespaces": narrowing.get("namespaces"),
                "default_namespace": narrowing.get("defaultNamespace"),
                "tools": narrowing.get("tools"),
            }
            assert parsed == {k: v for k, v in expected.items() if v}, f"bridge {entry['name']} narrowing is {parsed}"
            assert env["MEMHUB_BRIDGE_CONFIG"]["value"].endswith("narrowing.toml")
        else:
            assert "MEMHUB_BRIDGE_CONFIG" not in env


def check_service_names(docs: list[Manifest], milvus_host: str, postgres_host: str | None) -> None:
    """The hub reaches Milvus/Postgres and bridges reach the hub through Service names, never loopback."""
    env = env_of(container(hub_deployment(docs), "hub"))
    uri = env["MEMHUB_MILVUS_URI"]["value"]
    assert uri.split("://", 1)[1].rsplit(":", 1)[0] == milvus_host, f"MEMHUB_MILVUS_URI is {uri}, expected host {milvus_host}"
    if postgres_host is not None:
        url = env["MEMHUB_DATABASE_URL"]["value"]
        assert url.split("@", 1)[1].split(":", 1)[0] == postgres_host, f"MEMHUB_DATABASE_URL is {url}, expected {postgres_host}"
    service_names = {s["metadata"]["name"] for s in of_kind(docs, "Service")}
    for d in bridge_deployments(docs):
        args = container(d)["args"]
        hub_address = args[args.index("--hub") + 1]
        host, port = hub_address.rsplit(":", 1)
        assert host in service_names, f"{d['metadata']['name']} reaches the hub at {hub_address}, which is no rendered Service"
        hub_service = named(docs, "Service", host)
        assert int(port) in {p["port"] for p in hub_service["spec"]["ports"]}
    for d in of_kind(docs, "Deployment"):
        for c in d["spec"]["template"]["spec"]["containers"]:
            for entry in c.get("env", []):
                value = str(entry.get("value", ""))
                assert not any(h in value for h in LOOPBACK), (
                    f"{d['metadata']['name']}: {entry['name']}={value} points at loopback"
                )
            hub_args = c.get("args", [])
            if "--hub" in hub_args:
                assert not any(h in hub_args[hub_args.index("--hub") + 1] for h in LOOPBACK)


def check_references(docs: list[Manifest]) -> None:
    """Everything one object names exists: selectors, ports, volumes, ConfigMaps, Ingress backends, HPA/PDB targets."""
    pods = {d["metadata"]["name"]: d["spec"]["template"] for d in of_kind(docs, "Deployment")}
    config_maps = {c["metadata"]["name"] for c in of_kind(docs, "ConfigMap")}
    accounts = {a["metadata"]["name"] for a in of_kind(docs, "ServiceAccount")} | {"default"}
    for name, template in pods.items():
        spec = template["spec"]
        volumes = {v["name"]: v for v in spec.get("volumes", [])}
        assert spec.get("serviceAccountName", "default") in accounts, (
            f"{name}: ServiceAccount {spec['serviceAccountName']} is not rendered"
        )
        for c in spec["containers"]:
            for m in c.get("volumeMounts", []):
                assert m["name"] in volumes, f"{name}: mounts undeclared volume {m['name']}"
        for v in volumes.values():
            if "configMap" in v:
                assert v["configMap"]["name"] in config_maps, (
                    f"{name}: volume {v['name']} names missing ConfigMap {v['configMap']['name']}"
                )
        selector = named(docs, "Deployment", name)["spec"]["selector"]["matchLabels"]
        assert selector.items() <= template["metadata"]["labels"].items(), f"{name}: its selector misses its own pods"
    for service in of_kind(docs, "Service"):
        selected = [t for t in pods.values() if service["spec"]["selector"].items() <= t["metadata"]["labels"].items()]
        assert len(selected) == 1, f"Service {service['metadata']['name']} selects {len(selected)} Deployments"
        port_names = {p["name"] for c in selected[0]["spec"]["containers"] for p in c.get("ports", [])}
        for port in service["spec"]["ports"]:
            assert port["targetPort"] in port_names, (
                f"Service {service['metadata']['name']} targets missing port {port['targetPort']}"
            )
    services = {s["metadata"]["name"]: s for s in of_kind(docs, "Service")}
    for ingress in of_kind(docs, "Ingress"):
        assert ingress["spec"]["rules"], "Ingress without rules"
        for rule in ingress["spec"]["rules"]:
            for path in rule["http"]["paths"]:
                backend = path["backend"]["service"]
                assert backend["name"] in services, f"Ingress routes to missing Service {backend['name']}"
                assert backend["port"]["name"] in {p["name"] for p in services[backend["name"]]["spec"]["ports"]}
    for hpa in of_kind(docs, "HorizontalPodAutoscaler"):
        target = hpa["spec"]["scaleTargetRef"]
        assert target["kind"] == "Deployment" and target["name"] in pods, f"HPA scales missing {target}"
    for pdb in of_kind(docs, "PodDisruptionBudget"):
        labels = pdb["spec"]["selector"]["matchLabels"]
        assert any(labels.items() <= t["metadata"]["labels"].items() for t in pods.values()), "PDB selects no pods"


# --------------------------------------------------------------------------- every CI values file


@pytest.mark.parametrize("values_file", CI_FILES, ids=lambda p: p.name)
@pytest.mark.parametrize("kube_version", KUBE_VERSIONS)
def test_ci_values_render_valid_manifests(chart: helm.Chart, values_file: Path, kube_version: str) -> None:
    values = yaml.safe_load(values_file.read_text(encoding="utf-8"))
    docs = render(chart, values)
    assert docs, "nothing rendered"
    for doc in docs:
        check_kubernetes_schema(doc, kube_version)
    for check in (
        check_no_secret_values,
        check_hub_replicas,
        check_grpc_probes,
        check_hardened,
        check_policy_configmap,
        check_references,
    ):
        check(docs)
    check_bridges(docs, values.get("bridges", []))


def test_ci_files_cover_bundled_external_minimal() -> None:
    assert {p.name for p in CI_FILES} == {"bundled-values.yaml", "external-values.yaml", "minimal-values.yaml"}


@pytest.mark.parametrize("values_file", [None, *CI_FILES], ids=lambda p: p.name if p else "defaults")
def test_helm_lint_passes(values_file: Path | None) -> None:
    values = yaml.safe_load(values_file.read_text(encoding="utf-8")) if values_file else None
    report = helm.lint(CHART, values, kube_version="v1.30.0")
    assert report["total_charts_linted"] == 1
    assert not report["errors"], report["errors"]
    above_info = [m["error"] for m in report["messages"] if m["severity"] >= 2]
    assert above_info == [MISSING_DEPENDENCIES], above_info


# --------------------------------------------------------------------------- dependency lock

# Go's field order of Helm's chart.Dependency and which fields it leaves out when empty (`json:",omitempty"`).
_DEPENDENCY_FIELDS = ("name", "version", "repository", "condition", "tags", "enabled", "import-values", "alias")
_ALWAYS_WRITTEN = ("name", "repository")


def helm_lock_digest(requirements: list[dict[str, Any]], locked: list[dict[str, Any]]) -> str:
    """The digest Helm writes into Chart.lock (internal/resolver HashReq): the sha256 of Go's JSON of
    [Chart.yaml's dependencies, the lock's dependencies]."""

    def go_json(dependency: dict[str, Any]) -> dict[str, Any]:
        return {k: dependency[k] for k in _DEPENDENCY_FIELDS if k in dependency and (dependency[k] or k in _ALWAYS_WRITTEN)}

    data = json.dumps([[go_json(d) for d in requirements], [go_json(d) for d in locked]], separators=(",", ":"))
    return "sha256:" + hashlib.sha256(data.encode()).hexdigest()


def test_helm_lock_digest_is_helms() -> None:
    # A published chart's Chart.yaml and Chart.lock (Chris-Greaves/planka-helm-chart, written by `helm dependency
    # update`): the function gives the digest Helm wrote.
    requirements = [
        {
            "alias": "postgresql",
            "condition": "postgresql.enabled",
            "name": "postgresql",
            "repository": "https://charts.bitnami.com/bitnami",
            "version": "12.2.7",
        }
    ]
    locked = [{"name": "postgresql", "repository": "https://charts.bitnami.com/bitnami", "version": "12.2.7"}]
    assert helm_lock_digest(requirements, locked) == "sha256:558995174f3f01e98d32d819919229619d48205e0faa89c3296bc9274028c39c"


def test_chart_lock_pins_exactly_the_versions_chart_yaml_declares(tmp_path: Path) -> None:
    declared = yaml.safe_load((CHART / "Chart.yaml").read_text(encoding="utf-8"))["dependencies"]
    lock = yaml.safe_load((CHART / "Chart.lock").read_text(encoding="utf-8"))
    for dependency in declared:  # exact versions: no range (^, ~, >=, x) that could resolve to another chart tomorrow
        assert re.fullmatch(r"\d+\.\d+\.\d+", dependency["version"]), dependency
    assert lock["dependencies"] == [{k: d[k] for k in ("name", "repository", "version")} for d in declared]
    assert lock["digest"] == helm_lock_digest(declared, lock["dependencies"])
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?(Z|[+-]\d\d:\d\d)", lock["generated"])

    # Helm itself (helm-python-sdk): `dependency build` compares the lock's digest with Chart.yaml first, then
    # fetches; offline, an in-sync lock gets as far as the repository index, an out-of-sync one stops at the digest.
    copy_dir = tmp_path / "memhub"
    shutil.copytree(CHART, copy_dir)
    with pytest.raises(helm.HelmRepoError) as in_sync:
        helm.dependency_build(copy_dir, skip_refresh=True)
    assert "out of sync" not in str(in_sync.value) and "index.yaml" in str(in_sync.value)
    chart_yaml = copy_dir / "Chart.yaml"
    chart_yaml.write_text(chart_yaml.read_text(encoding="utf-8").replace('version: "5.0.23"', 'version: "5.0.24"'))
    with pytest.raises(helm.HelmRepoError, match=r"\(Chart\.lock\) is out of sync with the dependencies file"):
        helm.dependency_build(copy_dir, skip_refresh=True)


@pytest.mark.parametrize("path", ["values.yaml", *(f"ci/{p.name}" for p in CI_FILES), "Chart.yaml"])
def test_yamllint(path: str) -> None:
    conf = yamllint_config.YamlLintConfig(file=str(YAMLLINT_CONFIG))
    problems = list(yamllint_linter.run((CHART / path).read_text(encoding="utf-8"), conf))
    assert not problems, "\n".join(f"{path}:{p.line}:{p.column} {p.rule} {p.message}" for p in problems)


def undocumented_values(text: str) -> list[str]:
    """Leaf keys of a values file without a comment right above them or above one of their parent keys."""
    lines = text.splitlines()
    undocumented = []
    parents: list[tuple[int, bool]] = []  # (indent, documented) of the enclosing keys
    for i, line in enumerate(lines):
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", "-")) or ":" not in stripped:
            continue
        indent = len(line) - len(line.lstrip())
        while parents and parents[-1][0] >= indent:
            parents.pop()
        documented = (i > 0 and lines[i - 1].strip().startswith("#")) or any(doc for _, doc in parents)
        if stripped.endswith(":"):
            parents.append((indent, documented))
        elif not documented:
            undocumented.append(f"line {i + 1}: {stripped}")
    return undocumented


def test_every_value_is_documented() -> None:
    undocumented = undocumented_values((CHART / "values.yaml").read_text(encoding="utf-8"))
    assert not undocumented, "values.yaml entries without a comment:\n" + "\n".join(undocumented)
    # The check itself notices a value nobody explained.
    assert undocumented_values("# -- documented\na: 1\ngroup:\n  # -- fine\n  b: 2\n  c: 3\n") == ["line 6: c: 3"]


def check_all_schemas(docs: list[Manifest]) -> None:
    for doc in docs:
        check_kubernetes_schema(doc, KUBE_VERSIONS[0])


# --------------------------------------------------------------------------- defaults and toggles


def test_defaults_run_two_hub_replicas_with_a_pdb_and_no_hpa(chart: helm.Chart) -> None:
    assert chart.values["hub"]["replicaCount"] >= 2
    docs = render(chart, ci_values("minimal"))
    check_hub_replicas(docs)
    assert hub_deployment(docs)["spec"]["replicas"] == chart.values["hub"]["replicaCount"]
    assert not of_kind(docs, "HorizontalPodAutoscaler")
    (pdb,) = of_kind(docs, "PodDisruptionBudget")
    assert pdb["apiVersion"] == "policy/v1" and pdb["spec"] == {
        "maxUnavailable": 1,
        "selector": {"matchLabels": hub_deployment(docs)["spec"]["selector"]["matchLabels"]},
    }
    assert not bridge_deployments(docs) and not of_kind(docs, "Ingress") and not of_kind(docs, "ServiceMonitor")


def test_pdb_can_be_turned_off_and_take_min_available(chart: helm.Chart) -> None:
    off = render(chart, merged(ci_values("minimal"), {"hub": {"podDisruptionBudget": {"enabled": False}}}))
    assert not of_kind(off, "PodDisruptionBudget")
    docs = render(chart, merged(ci_values("minimal"), {"hub": {"podDisruptionBudget": {"minAvailable": "50%"}}}))
    (pdb,) = of_kind(docs, "PodDisruptionBudget")
    assert pdb["spec"]["minAvailable"] == "50%" and "maxUnavailable" not in pdb["spec"]


def test_hpa_rendered_when_enabled(chart: helm.Chart) -> None:
    values = ci_values("external")
    docs = render(chart, values)
    (hpa,) = of_kind(docs, "HorizontalPodAutoscaler")
    assert hpa["apiVersion"] == "autoscaling/v2"
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": HUB}
    autoscaling = values["hub"]["autoscaling"]
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (autoscaling["minReplicas"], autoscaling["maxReplicas"])
    assert {m["resource"]["name"] for m in hpa["spec"]["metrics"]} == {"cpu", "memory"}
    assert "replicas" not in hub_deployment(docs)["spec"]
    (pdb,) = of_kind(docs, "PodDisruptionBudget")
    assert pdb["spec"]["minAvailable"] == 2


def test_metrics_and_service_monitor_only_when_enabled(chart: helm.Chart) -> None:
    plain = render(chart, ci_values("minimal"))
    assert [p["name"] for p in named(plain, "Service", HUB)["spec"]["ports"]] == ["grpc"]
    docs = render(
        chart, merged(ci_values("minimal"), {"metrics": {"enabled": True, "serviceMonitor": {"labels": {"release": "prom"}}}})
    )
    (sm,) = of_kind(docs, "ServiceMonitor")
    assert sm["metadata"]["labels"]["release"] == "prom"
    assert [p["name"] for p in named(docs, "Service", HUB)["spec"]["ports"]] == ["grpc", "metrics"]
    check_service_monitor(docs)
    check_references(docs)
    for doc in docs:
        check_kubernetes_schema(doc, KUBE_VERSIONS[0])
    no_sm = render(chart, merged(ci_values("minimal"), {"metrics": {"enabled": True, "serviceMonitor": {"enabled": False}}}))
    assert not of_kind(no_sm, "ServiceMonitor")
    assert "MEMHUB_METRICS_PORT" not in env_of(container(hub_deployment(plain)))


def test_the_metrics_port_is_the_one_the_hub_serves(chart: helm.Chart) -> None:
    """The container's `metrics` port, the env the hub reads, the Service and the ServiceMonitor agree."""
    docs = render(chart, merged(ci_values("minimal"), {"metrics": {"enabled": True, "port": 9555}}))
    hub = container(hub_deployment(docs))
    env = env_of(hub)
    assert env["MEMHUB_METRICS_PORT"]["value"] == "9555"
    assert env["MEMHUB_METRICS_HOST"]["value"] == "0.0.0.0"  # Prometheus scrapes the pod's address
    (port,) = [p for p in hub["ports"] if p["name"] == "metrics"]
    assert port["containerPort"] == 9555
    (service_port,) = [p for p in named(docs, "Service", HUB)["spec"]["ports"] if p["name"] == "metrics"]
    assert (service_port["port"], service_port["targetPort"]) == (9555, "metrics")
    (sm,) = of_kind(docs, "ServiceMonitor")
    assert [(e["port"], e["path"]) for e in sm["spec"]["endpoints"]] == [("metrics", "/metrics")]
    text = notes(chart, merged(ci_values("minimal"), {"metrics": {"enabled": True, "port": 9555}}))
    assert "port-forward deploy/" in text and "9555" in text and "does not serve" not in text


def test_policy_configmap_live_reload_by_default_checksum_on_request(chart: helm.Chart) -> None:
    docs = render(chart, ci_values("minimal"))
    annotations = hub_deployment(docs)["spec"]["template"]["metadata"].get("annotations", {})
    assert "checksum/policies" not in annotations, "by default a policy change must not restart the hub (it reloads)"
    values = merged(ci_values("minimal"), {"policies": {"restartOnChange": True}})
    first = hub_deployment(render(chart, values))["spec"]["template"]["metadata"]["annotations"]["checksum/policies"]
    changed = merged(values, {"policies": {"files": {"extra.cedar": '@id("x")\nforbid(principal, action, resource);\n'}}})
    second = hub_deployment(render(chart, changed))["spec"]["template"]["metadata"]["annotations"]["checksum/policies"]
    assert first != second


def test_policy_files_extend_and_replace_the_shipped_ones(chart: helm.Chart) -> None:
    docs = render(chart, ci_values("external"))
    cm = named(docs, "ConfigMap", "memhub-policies")
    assert set(cm["data"]) == {"default.cedar", "operators.cedar", "schema.cedarschema", "fleet.cedar"}
    assert env_of(container(hub_deployment(docs)))["MEMHUB_POLICY_FILES"]["value"] == "default.cedar,fleet.cedar"
    replaced = render(chart, merged(ci_values("minimal"), {"policies": {"files": {"default.cedar": "// mine\n"}}}))
    assert named(replaced, "ConfigMap", "memhub-policies")["data"]["default.cedar"] == "// mine\n"
    own = render(chart, merged(ci_values("minimal"), {"policies": {"existingConfigMap": "my-policies"}}))
    assert not [c for c in of_kind(own, "ConfigMap") if c["metadata"]["name"] == "memhub-policies"]
    volume = next(v for v in hub_deployment(own)["spec"]["template"]["spec"]["volumes"] if v["name"] == "policies")
    assert volume["configMap"]["name"] == "my-policies"


def test_policy_mistakes_fail_rendering(chart: helm.Chart) -> None:
    with pytest.raises(helm.HelmRenderError, match="policies.load names fleet.cedar"):
        render(chart, merged(ci_values("minimal"), {"policies": {"load": ["fleet.cedar"]}}))
    with pytest.raises(helm.HelmRenderError, match="no schema.cedarschema"):
        render(chart, merged(ci_values("minimal"), {"policies": {"includeShipped": False, "files": {"a.cedar": "//"}}}))


def test_bundled_stores_are_reached_by_their_service_names(chart: helm.Chart) -> None:
    docs = render(chart, ci_values("bundled"))
    check_service_names(docs, milvus_host="memhub-milvus", postgres_host="memhub-postgresql")
    env = env_of(container(hub_deployment(docs)))
    assert env["PGPASSWORD"]["valueFrom"]["secretKeyRef"] == {"name": "memhub-postgresql", "key": "password"}
    # Another release name: the subcharts' names follow it.
    other = render(chart, ci_values("bundled"), release="prod")
    check_service_names(other, milvus_host="prod-milvus", postgres_host="prod-postgresql")
    replicated = render(chart, merged(ci_values("bundled"), {"postgresql": {"architecture": "replication"}}), release="prod")
    check_service_names(replicated, milvus_host="prod-milvus", postgres_host="prod-postgresql-primary")


def test_the_milvus_server_gets_hnsw_and_its_parameters(chart: helm.Chart) -> None:
    """The server's dense index is named with its parameters (issue 27), and the schema bounds them."""
    env = env_of(container(hub_deployment(render(chart, ci_values("external")))))
    assert {name: env[name]["value"] for name in env if name.startswith(("MEMHUB_MILVUS_HNSW", "MEMHUB_MILVUS_DENSE"))} == {
        "MEMHUB_MILVUS_DENSE_INDEX": "HNSW",
        "MEMHUB_MILVUS_HNSW_M": "16",
        "MEMHUB_MILVUS_HNSW_EF_CONSTRUCTION": "200",
        "MEMHUB_MILVUS_HNSW_EF": "128",
    }
    assert env["MEMHUB_INDEXER_WORKERS"]["value"] == "2"
    tuned = merged(ci_values("external"), {"hub": {"denseIndex": {"type": "AUTOINDEX", "hnswEf": 256}}})
    assert env_of(container(hub_deployment(render(chart, tuned))))["MEMHUB_MILVUS_DENSE_INDEX"]["value"] == "AUTOINDEX"
    for wrong in ({"type": "IVF_FLAT"}, {"hnswM": 2}, {"hnswEf": 0}):
        with pytest.raises(helm.HelmValuesError):
            chart.validate_schema(merged(ci_values("minimal"), {"hub": {"denseIndex": wrong}}))


def test_external_stores_use_the_configured_hosts_and_secrets(chart: helm.Chart) -> None:
    values = ci_values("external")
    docs = render(chart, values)
    check_service_names(docs, milvus_host=values["externalMilvus"]["host"], postgres_host=None)
    env = env_of(container(hub_deployment(docs)))
    assert env["MEMHUB_DATABASE_URL"]["valueFrom"]["secretKeyRef"] == {"name": "memhub-database", "key": "database-url"}
    assert env["MEMHUB_MILVUS_TOKEN"]["valueFrom"]["secretKeyRef"] == {"name": "memhub-milvus", "key": "token"}
    assert env["MEMHUB_EMBEDDING_API_KEY"]["valueFrom"]["secretKeyRef"] == {"name": "memhub-embedding", "key": "api-key"}
    assert env["MEMHUB_EMBEDDING_PROVIDER"]["value"] == "openai"
    assert env["MEMHUB_EMBEDDING_BASE_URL"]["value"] == values["embedding"]["baseUrl"]
    assert env["MEMHUB_JWKS_FILE"]["value"] == "/etc/memhub/jwks/jwks.json"
    assert env["MEMHUB_JWT_ISSUER"]["value"] == "https://auth.example.com"


def test_token_keys_are_mounted_files(chart: helm.Chart) -> None:
    values = merged(
        ci_values("minimal"),
        {
            "auth": {
                "publicKeys": {
                    "existingSecret": "memhub-signers",
                    "keys": [{"key": "a.pem", "alg": "ES256", "kid": "k1"}, {"key": "b.pem"}],
                }
            }
        },
    )
    docs = render(chart, values)
    deployment = hub_deployment(docs)
    env = env_of(container(deployment))
    assert env["MEMHUB_JWT_SECRET_FILE"]["value"] == "/etc/memhub/jwt/jwt-secret"
    assert env["MEMHUB_JWT_PUBLIC_KEYS"]["value"] == "/etc/memhub/jwt-public/a.pem:ES256:k1,/etc/memhub/jwt-public/b.pem"
    volumes = {v["name"]: v for v in deployment["spec"]["template"]["spec"]["volumes"]}
    assert volumes["jwt-secret"]["secret"]["secretName"] == "memhub-jwt"
    assert volumes["jwt-secret"]["secret"]["defaultMode"] == 0o440
    assert [i["key"] for i in volumes["jwt-public-keys"]["secret"]["items"]] == ["a.pem", "b.pem"]
    for doc in docs:
        check_kubernetes_schema(doc, KUBE_VERSIONS[0])


def test_bridges_follow_the_list(chart: helm.Chart) -> None:
    values = ci_values("external")
    docs = render(chart, values)
    check_bridges(docs, values["bridges"])
    (ingress,) = of_kind(docs, "Ingress")
    assert {r["host"] for r in ingress["spec"]["rules"]} == {b["ingress"]["host"] for b in values["bridges"]}
    reviewer = env_of(container(named(docs, "Deployment", "memhub-bridge-reviewer")))
    assert reviewer["MEMHUB_BRIDGE_ALLOWED_ORIGINS"]["value"] == "https://console.example.com"
    assert container(named(docs, "Deployment", "memhub-bridge-reviewer"))["resources"]["requests"] == {
        "cpu": "20m",
        "memory": "96Mi",
    }
    three = merged(values, {})
    three["bridges"] = [
        *values["bridges"],
        {"name": "third", "agentToken": {"existingSecret": "t"}, "httpToken": {"existingSecret": "h"}},
    ]
    docs3 = render(chart, three)
    check_bridges(docs3, three["bridges"])
    assert len(bridge_deployments(docs3)) == 3


# --------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    "override",
    [
        {"hub": {"replicaCount": "two"}},
        {"hub": {"autoscaling": {"enabled": "yes"}}},
        {"externalMilvus": {"port": "19530"}},
        {"bridges": {"name": "planner"}},
        {
            "bridges": [
                {
                    "name": "planner",
                    "agentToken": {"existingSecret": "a"},
                    "httpToken": {"existingSecret": "b"},
                    "narrowing": {"tools": ["delete_everything"]},
                }
            ]
        },
        {"bridges": [{"name": "Planner_1", "agentToken": {"existingSecret": "a"}, "httpToken": {"existingSecret": "b"}}]},
        {"embedding": {"provider": "cohere"}},
        {"replicaCount": 3},
        {"hub": {"replicas": 3}},
        {"metrics": {"path": "/stats"}},
    ],
    ids=[
        "string-replicas",
        "string-bool",
        "string-port",
        "bridges-not-a-list",
        "unknown-tool",
        "bad-bridge-name",
        "bad-provider",
        "unknown-top-level-key",
        "unknown-hub-key",
        "metrics-path-the-hub-does-not-serve",
    ],
)
def test_schema_rejects_wrong_values(chart: helm.Chart, override: dict[str, Any]) -> None:
    values = merged(ci_values("minimal"), override)
    with pytest.raises(helm.HelmValuesError):
        chart.render(values, name=RELEASE, namespace=NAMESPACE)
    with pytest.raises(helm.HelmValuesError):
        chart.validate_schema(values)
    report = helm.lint(CHART, values)
    assert report["errors"], f"lint accepted {override}"


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"externalPostgresql": {"existingSecret": ""}}, "externalPostgresql.existingSecret is required"),
        ({"auth": {"hs256": {"existingSecret": ""}}}, "no token key configured"),
        (
            {"externalPostgresql": {"enabled": False}, "postgresql": {"enabled": True}},
            "postgresql.auth.existingSecret is required",
        ),
        (
            {"bridges": [{"name": "planner", "agentToken": {"existingSecret": ""}, "httpToken": {"existingSecret": "h"}}]},
            r"bridges\[planner\].agentToken.existingSecret is required",
        ),
        (
            {"bridges": [{"name": "planner", "agentToken": {"existingSecret": "a"}, "httpToken": {"existingSecret": ""}}]},
            r"bridges\[planner\].httpToken.existingSecret is required",
        ),
        ({"externalMilvus": {"enabled": False}}, "no Milvus configured"),
        ({"externalPostgresql": {"enabled": False}}, "no PostgreSQL configured"),
        ({"milvus": {"enabled": True}}, "milvus.enabled and externalMilvus.enabled are both true"),
        ({"externalMilvus": {"host": "localhost"}}, "points inside the hub's own pod"),
        ({"externalMilvus": {"host": ""}}, "externalMilvus.host is required"),
        ({"auth": {"publicKeys": {"existingSecret": "k"}}}, "auth.publicKeys.keys is empty"),
        ({"embedding": {"provider": "openai"}}, "embedding.baseUrl is required"),
        ({"ingress": {"enabled": True}}, "no entry of bridges has ingress.host"),
        (
            {"bridges": [{"name": "a", "agentToken": {"existingSecret": "x"}, "httpToken": {"existingSecret": "y"}}] * 2},
            'two entries of bridges are named "a"',
        ),
    ],
    ids=[
        "database-secret",
        "token-key",
        "bundled-postgres-secret",
        "bridge-agent-token",
        "bridge-http-token",
        "no-milvus",
        "no-postgres",
        "both-milvus",
        "loopback-milvus",
        "milvus-host",
        "public-keys-list",
        "embedding-url",
        "ingress-without-hosts",
        "duplicate-bridge",
    ],
)
def test_missing_or_contradictory_settings_fail_with_a_message(chart: helm.Chart, override: dict[str, Any], message: str) -> None:
    with pytest.raises(helm.HelmRenderError, match=message):
        render(chart, merged(ci_values("minimal"), override))


def test_notes_tell_how_to_reach_the_hub_and_bridges(chart: helm.Chart) -> None:
    text = notes(chart, ci_values("external"))
    assert f"{HUB}:50051" in text and "memhub token issue" in text
    assert "memhub-bridge-planner.memhub.svc:8765/mcp" in text and "https://reviewer.mcp.example.com/mcp" in text


# --------------------------------------------------------------------------- the checks can fail


def _set(path: str, value: Any) -> Callable[[list[Manifest]], None]:
    """A mutation setting `path` (Kind/name:dotted.path, list indexes as numbers) in a render."""
    target, dotted = path.split(":", 1)
    kind, name = target.split("/", 1)

    def mutate(docs: list[Manifest]) -> None:
        node: Any = named(docs, kind, name)
        *parents, last = dotted.split(".")
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        if value is _DELETE:
            del node[int(last) if isinstance(node, list) else last]
        elif isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value

    return mutate


_DELETE = object()
HUB_POD = f"Deployment/{HUB}:spec.template.spec"
HUB_CONTAINER = f"{HUB_POD}.containers.0"


def _add_secret(docs: list[Manifest]) -> None:
    docs.append({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "oops"}, "stringData": {"jwt-secret": "x" * 32}})


def _literal_database_url(docs: list[Manifest]) -> None:
    env = container(hub_deployment(docs))["env"]
    entry = next(e for e in env if e["name"] == "MEMHUB_DATABASE_URL")
    entry.pop("valueFrom", None)
    entry["value"] = "postgresql://memhub:hunter2@pg.example.com/memhub"


def _loopback_milvus(docs: list[Manifest]) -> None:
    entry = next(e for e in container(hub_deployment(docs))["env"] if e["name"] == "MEMHUB_MILVUS_URI")
    entry["value"] = "http://localhost:19530"


def _edit_policy(docs: list[Manifest]) -> None:
    cm = named(docs, "ConfigMap", "memhub-policies")
    cm["data"]["default.cedar"] = cm["data"]["default.cedar"].replace("permit", "forbid", 1)


def _drop_bridge(docs: list[Manifest]) -> None:
    docs.remove(named(docs, "Deployment", "memhub-bridge-reviewer"))


def _bridge_to_localhost(docs: list[Manifest]) -> None:
    args = container(named(docs, "Deployment", "memhub-bridge-planner"))["args"]
    args[args.index("--hub") + 1] = "127.0.0.1:50051"


def _add_service_monitor(docs: list[Manifest]) -> None:
    docs.append(
        {
            "apiVersion": "monitoring.coreos.com/v1",
            "kind": "ServiceMonitor",
            "metadata": {"name": "x"},
            "spec": {
                "selector": {"matchLabels": {"app.kubernetes.io/component": "hub"}},
                "endpoints": [{"port": "metrics", "path": "/metrics"}],
            },
        }
    )


BROKEN = {
    "schema: unknown field": (
        lambda d: check_kubernetes_schema(hub_deployment(d), KUBE_VERSIONS[0]),
        _set(f"{HUB_CONTAINER}.livenessProbe.grpcc", {"port": 1}),
    ),
    "schema: wrong type": (
        lambda d: check_kubernetes_schema(hub_deployment(d), KUBE_VERSIONS[0]),
        _set(f"Deployment/{HUB}:spec.replicas", "two"),
    ),
    "schema: unknown kind": (check_all_schemas, _set("Ingress/memhub-bridges:kind", "Ingres")),
    "schema: bad port name": (check_all_schemas, _set(f"Service/{HUB}:spec.ports.0.port", "grpc")),
    "secret object": (check_no_secret_values, _add_secret),
    "literal database url": (check_no_secret_values, _literal_database_url),
    "literal bridge token": (
        check_no_secret_values,
        _set(
            "Deployment/memhub-bridge-planner:spec.template.spec.containers.0.env.0", {"name": "MEMHUB_TOKEN", "value": "eyJ..."}
        ),
    ),
    "one hub replica": (check_hub_replicas, _set(f"Deployment/{HUB}:spec.replicas", 1)),
    "hpa below two": (check_hub_replicas, _set("HorizontalPodAutoscaler/memhub-hub:spec.minReplicas", 1)),
    "http liveness": (check_grpc_probes, _set(f"{HUB_CONTAINER}.livenessProbe", {"httpGet": {"path": "/", "port": 50051}})),
    "no readiness": (check_grpc_probes, _set(f"{HUB_CONTAINER}.readinessProbe", _DELETE)),
    "probe on wrong port": (check_grpc_probes, _set(f"{HUB_CONTAINER}.startupProbe.grpc.port", 8080)),
    "writable root": (check_hardened, _set(f"{HUB_CONTAINER}.securityContext.readOnlyRootFilesystem", False)),
    "root pod": (check_hardened, _set(f"{HUB_POD}.securityContext.runAsNonRoot", False)),
    "edited default policy": (check_policy_configmap, _edit_policy),
    "policies via subPath": (check_policy_configmap, _set(f"{HUB_CONTAINER}.volumeMounts.2.subPath", "default.cedar")),
    "missing bridge": (lambda d: check_bridges(d, ci_values("external")["bridges"]), _drop_bridge),
    "bridge readiness": (
        lambda d: check_bridges(d, ci_values("external")["bridges"]),
        _set("Deployment/memhub-bridge-planner:spec.template.spec.containers.0.readinessProbe.httpGet.path", "/"),
    ),
    "loopback milvus": (lambda d: check_service_names(d, "milvus-proxy.milvus.svc.cluster.local", None), _loopback_milvus),
    "bridge to loopback": (lambda d: check_service_names(d, "milvus-proxy.milvus.svc.cluster.local", None), _bridge_to_localhost),
    "service selects nothing": (check_references, _set(f"Service/{HUB}:spec.selector", {"app.kubernetes.io/component": "nope"})),
    "missing target port": (check_references, _set(f"Service/{HUB}:spec.ports.0.targetPort", "grpcx")),
    "missing configmap": (check_references, _set(f"{HUB_POD}.volumes.2.configMap.name", "nope")),
    "ingress to nowhere": (
        check_references,
        _set("Ingress/memhub-bridges:spec.rules.0.http.paths.0.backend.service.name", "nope"),
    ),
    "service monitor port": (check_service_monitor, _add_service_monitor),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_checks_catch_broken_manifests(chart: helm.Chart, case: str) -> None:
    check, mutate = BROKEN[case]
    docs = render(chart, ci_values("external"))
    check(docs)  # the unbroken render passes...
    mutate(docs)
    with pytest.raises(AssertionError):
        check(docs)  # ...and the broken one does not
