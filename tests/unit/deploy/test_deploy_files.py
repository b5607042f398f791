"""The deployment files in deploy/ are valid: the compose file parses and is coherent, the Kubernetes
manifests pass the Kubernetes OpenAPI schema (kubernetes-validate ships it: no network), and the
configuration they carry is a valid TARSy configuration."""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path

import pytest
import yaml

from tests.support.processes import worker_command

ROOT = Path(__file__).resolve().parents[3]
DEPLOY = ROOT / "deploy"
K8S = DEPLOY / "k8s"
TARSY_SERVICES = ("migrate", "web", "worker", "beat")
K8S_VERSION = "1.30.0"


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text())


def _manifests() -> list[tuple[str, dict]]:
    docs = []
    for path in sorted(K8S.glob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        docs += [(path.name, doc) for doc in yaml.safe_load_all(path.read_text()) if doc]
    return docs


def _by_kind(kind: str) -> dict[str, dict]:
    return {doc["metadata"]["name"]: doc for _, doc in _manifests() if doc["kind"] == kind}


def _container(deployment: dict, name: str | None = None) -> dict:
    """The pod's TARSy container (named like its component), or the container called `name`."""
    wanted = name or deployment["metadata"]["labels"]["app.kubernetes.io/component"]
    (container,) = [c for c in deployment["spec"]["template"]["spec"]["containers"] if c["name"] == wanted]
    return container


SKIP_AUTH_ROUTES = {"^/health$",  # probes
                    # Slack, authenticated by its request signature
                    "POST=^/api/v1/slack/(events|commands|interactions)$"}


def _args(args: list[str], flag: str) -> set[str]:
    """Every value of a repeatable `--flag=value`."""
    return {arg.split("=", 1)[1] for arg in args if arg.startswith(f"{flag}=")}


def _arg(args: list[str], flag: str) -> str:
    """The value of `--flag=value` or `--flag value` in a command line."""
    for i, arg in enumerate(args):
        if arg.startswith(f"{flag}="):
            return arg.split("=", 1)[1]
        if arg == flag:
            return args[i + 1]
    raise AssertionError(f"{flag} not in {args}")


# ---- compose ------------------------------------------------------------------------------------------

def test_compose_has_every_process_and_backing_service(compose):
    assert set(compose["services"]) == {"postgres", "redis", "migrate", "web", "worker", "beat", "oauth2-proxy",
                                        "prometheus"}
    assert compose["services"]["prometheus"]["profiles"] == ["monitoring"]  # optional: teams have their own
    assert "profiles" not in compose["services"]["oauth2-proxy"]  # always in front: there is no unguarded web


def test_compose_publishes_only_the_proxy_and_web_listens_on_loopback(compose):
    services = compose["services"]
    proxy, web = services["oauth2-proxy"], services["web"]
    # The proxy shares web's network namespace: it alone reaches uvicorn on 127.0.0.1.
    assert proxy["network_mode"] == "service:web"
    assert _arg(web["command"], "--host") == "127.0.0.1"
    assert _arg(proxy["command"], "--upstream") == f"http://127.0.0.1:{_arg(web['command'], '--port')}"
    proxy_port = _arg(proxy["command"], "--http-address").rsplit(":", 1)[1]
    published = {name: s["ports"] for name, s in services.items() if s.get("ports")}
    assert published == {"web": ["${TARSY_PORT:-4180}:" + proxy_port]}  # web's namespace, the proxy's port
    assert _args(proxy["command"], "--skip-auth-route") == SKIP_AUTH_ROUTES  # the only routes without a login


def test_compose_proxy_requires_who_may_sign_in_and_its_keys(compose):
    proxy = compose["services"]["oauth2-proxy"]
    env = proxy["environment"]
    for name in ("OAUTH2_PROXY_EMAIL_DOMAINS", "OAUTH2_PROXY_CLIENT_ID", "OAUTH2_PROXY_CLIENT_SECRET",
                 "OAUTH2_PROXY_COOKIE_SECRET"):
        assert re.fullmatch(rf"\$\{{{name}:\?[^}}]+\}}", env[name]), f"{name} must be required: {env[name]}"
    assert not any("email-domain" in arg for arg in proxy["command"])  # no "*" on the command line either
    assert "*" not in env["OAUTH2_PROXY_EMAIL_DOMAINS"]


def test_compose_tarsy_services_build_the_dockerfile_and_reach_postgres_and_redis(compose):
    for name in TARSY_SERVICES:
        service = compose["services"][name]
        assert service["build"]["dockerfile"] == "deploy/Dockerfile"
        assert (DEPLOY / service["build"]["context"] / service["build"]["dockerfile"]).resolve().is_file()
        assert service["image"].startswith("${TARSY_IMAGE")
        env = service["environment"]
        assert env["DATABASE_URL"].startswith("postgres://") and "@postgres:5432/" in env["DATABASE_URL"]
        assert env["REDIS_URL"] == "redis://redis:6379/0"
        assert env["TARSY_CONFIG_DIR"] == "/etc/tarsy"
        assert "./config:/etc/tarsy:ro" in service["volumes"]
        assert service["env_file"] == ["tarsy.env"]


def test_compose_commands_start_the_right_process(compose):
    services = compose["services"]
    assert services["web"]["command"][:1] == ["uvicorn"] and "tarsy.asgi:application" in services["web"]["command"]
    assert "--no-proxy-headers" in services["web"]["command"]  # a client must not claim a trusted address
    assert "celery -A tarsy worker" in " ".join(services["worker"]["command"])
    # The worker runs the pool its settings size database connections for, threads unless told otherwise.
    assert "-P ${TARSY_WORKER_POOL}" in " ".join(services["worker"]["command"]).replace("$$", "$")
    assert services["worker"]["environment"]["TARSY_WORKER_POOL"] == "${TARSY_WORKER_POOL:-threads}"
    assert services["worker"]["environment"]["DATABASE_URL"] == services["web"]["environment"]["DATABASE_URL"]
    assert services["beat"]["command"][:4] == ["celery", "-A", "tarsy", "beat"]
    assert services["migrate"]["command"] == ["python", "manage.py", "migrate", "--noinput"]
    assert "deploy" not in services["beat"] or services["beat"]["deploy"].get("replicas", 1) == 1


def test_compose_dependencies_exist_and_wait_for_health_or_migration(compose):
    services = compose["services"]
    for name, service in services.items():
        for dependency, rule in service.get("depends_on", {}).items():
            assert dependency in services, f"{name} depends on unknown service {dependency}"
            condition = rule["condition"]
            assert condition in ("service_healthy", "service_completed_successfully", "service_started")
            if condition == "service_healthy":
                assert "healthcheck" in services[dependency], f"{dependency} has no healthcheck"
    for name in ("web", "worker", "beat"):
        assert services[name]["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    assert services["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy"


def test_compose_healthchecks(compose):
    services = compose["services"]
    for name in ("postgres", "redis", "web", "worker"):
        check = services[name]["healthcheck"]
        assert check["test"][0] in ("CMD", "CMD-SHELL") and len(check["test"]) > 1
        assert re.fullmatch(r"\d+[smh]", check["interval"])
    assert "http://127.0.0.1:8000/health" in services["web"]["healthcheck"]["test"]


def test_compose_redis_keeps_the_task_queue_in_an_append_only_file_on_a_volume(compose):
    redis = compose["services"]["redis"]
    command = redis["command"]
    assert command[0] == "redis-server" and command[command.index("--appendonly") + 1] == "yes"
    assert any(volume.endswith(":/data") for volume in redis["volumes"])  # the image's working directory


def test_compose_named_volumes_are_declared(compose):
    declared = set(compose.get("volumes", {}))
    for service in compose["services"].values():
        for volume in service.get("volumes", []):
            source = volume.split(":", 1)[0]
            if not source.startswith((".", "/")):
                assert source in declared


def test_dockerfile_copies_what_exists_and_serves_uvicorn():
    text = (DEPLOY / "Dockerfile").read_text()
    for source in re.findall(r"^COPY\s+(\S+)\s+\S+$", text, flags=re.M):
        assert (ROOT / source).exists(), f"Dockerfile copies missing {source}"
    assert re.search(r'^CMD \["uvicorn".*"--no-proxy-headers".*"tarsy\.asgi:application"\]', text, flags=re.M)
    assert "FORWARDED_ALLOW_IPS" not in text
    assert re.search(r"^USER \d+", text, flags=re.M)


def test_each_process_gets_the_settings_its_entry_point_names():
    """uvicorn's tarsy.asgi runs on the web settings, celery on the worker's, manage.py on the shared ones: a
    DJANGO_SETTINGS_MODULE set for the whole image or every container would give them all the same."""
    for path in [DEPLOY / "Dockerfile", DEPLOY / "compose.yaml", DEPLOY / "tarsy.env.example", *K8S.glob("*.yaml")]:
        assert "DJANGO_SETTINGS_MODULE" not in path.read_text(), path


# ---- Kubernetes -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, doc", _manifests(), ids=lambda v: v if isinstance(v, str) else v["kind"])
def test_manifest_passes_the_kubernetes_schema(name, doc):
    import kubernetes_validate

    try:
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
    except kubernetes_validate.ValidationError as exc:
        pytest.fail(f"{name}: {doc['kind']}/{doc['metadata']['name']}: {exc.message} at {list(exc.path)}")


def test_kustomization_lists_every_manifest():
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    files = {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml"}
    assert set(kustomization["resources"]) == files


def test_expected_resources_exist():
    deployments = _by_kind("Deployment")
    assert set(deployments) == {"tarsy-web", "tarsy-worker", "tarsy-beat"}
    assert set(_by_kind("Service")) == {"tarsy-web"}
    assert set(_by_kind("NetworkPolicy")) == {"tarsy-web"}
    assert {"tarsy-config", "tarsy-env", "tarsy-oauth2-proxy"} <= set(_by_kind("ConfigMap"))
    assert set(_by_kind("Secret")) == {"tarsy-secrets", "tarsy-oauth2-proxy"}
    job = _by_kind("Job")["tarsy-migrate"]
    assert _job_container(job)["command"] == ["python", "manage.py", "migrate", "--noinput"]


def _job_container(job: dict) -> dict:
    (container,) = job["spec"]["template"]["spec"]["containers"]
    return container


def test_deployment_selectors_match_their_pods_and_the_service():
    for deployment in _by_kind("Deployment").values():
        selector = deployment["spec"]["selector"]["matchLabels"]
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        assert selector.items() <= labels.items()
    service = _by_kind("Service")["tarsy-web"]
    web = _by_kind("Deployment")["tarsy-web"]
    assert service["spec"]["selector"].items() <= web["spec"]["template"]["metadata"]["labels"].items()
    port_names = {p["name"] for p in _container(web, "oauth2-proxy")["ports"]}
    assert all(p["targetPort"] in port_names for p in service["spec"]["ports"])


def test_web_listens_on_loopback_behind_the_proxy_sidecar_and_the_service_reaches_only_the_proxy():
    deployment = _by_kind("Deployment")["tarsy-web"]
    web, proxy = _container(deployment), _container(deployment, "oauth2-proxy")
    assert _arg(web["command"], "--host") == "127.0.0.1" and "ports" not in web
    assert _arg(proxy["args"], "--upstream") == f"http://127.0.0.1:{_arg(web['command'], '--port')}"
    proxy_port = proxy["ports"][0]["containerPort"]
    assert _arg(proxy["args"], "--http-address") == f"0.0.0.0:{proxy_port}"
    assert _args(proxy["args"], "--skip-auth-route") == SKIP_AUTH_ROUTES
    service = _by_kind("Service")["tarsy-web"]
    assert [p["targetPort"] for p in service["spec"]["ports"]] == [proxy["ports"][0]["name"]]
    policy = _by_kind("NetworkPolicy")["tarsy-web"]["spec"]
    assert policy["podSelector"]["matchLabels"].items() <= deployment["spec"]["template"]["metadata"]["labels"].items()
    assert policy["policyTypes"] == ["Ingress"]
    metrics_port = _container(deployment, "metrics")["ports"][0]["containerPort"]
    assert [port for rule in policy["ingress"] for port in rule["ports"]] == [
        {"port": proxy_port, "protocol": "TCP"}, {"port": metrics_port, "protocol": "TCP"}]


def test_proxy_mode_trusts_only_the_sidecar_and_sign_in_is_restricted():
    system = yaml.safe_load(_by_kind("ConfigMap")["tarsy-config"]["data"]["tarsy.yaml"])["system"]
    assert system["auth"]["mode"] == "proxy"
    loopback = [ipaddress.ip_network("127.0.0.0/8"), ipaddress.ip_network("::1/128")]
    for entry in system["trusted_proxies"]:
        network = ipaddress.ip_network(entry, strict=False)
        assert any(network.version == lo.version and network.subnet_of(lo) for lo in loopback), entry
    proxy_env = _by_kind("ConfigMap")["tarsy-oauth2-proxy"]["data"]
    assert proxy_env["OAUTH2_PROXY_EMAIL_DOMAINS"] and "*" not in proxy_env["OAUTH2_PROXY_EMAIL_DOMAINS"]
    proxy = _container(_by_kind("Deployment")["tarsy-web"], "oauth2-proxy")
    refs = [next(iter(ref.values()))["name"] for ref in proxy["envFrom"]]
    assert refs == ["tarsy-oauth2-proxy", "tarsy-oauth2-proxy"]
    assert {"OAUTH2_PROXY_CLIENT_ID", "OAUTH2_PROXY_CLIENT_SECRET", "OAUTH2_PROXY_COOKIE_SECRET"} <= set(
        _by_kind("Secret")["tarsy-oauth2-proxy"]["stringData"])


def test_web_probes_use_health():
    deployment = _by_kind("Deployment")["tarsy-web"]
    web = _container(deployment)
    for probe in ("startupProbe", "readinessProbe"):
        command = web[probe]["exec"]["command"]  # inside the pod: uvicorn's port is loopback-only
        assert command[0] == "curl" and "-f" in command[1] and command[-1] == "http://127.0.0.1:8000/health"
    assert "livenessProbe" in web
    assert web["command"][0] == "uvicorn" and "tarsy.asgi:application" in web["command"]
    assert "--no-proxy-headers" in web["command"]
    assert _container(deployment, "oauth2-proxy")["readinessProbe"]["httpGet"]["path"] == "/ping"


def test_worker_is_sized_by_env_and_beat_is_a_single_replica():
    env = _by_kind("ConfigMap")["tarsy-env"]["data"]
    worker = _container(_by_kind("Deployment")["tarsy-worker"])
    assert "$(TARSY_WORKER_CONCURRENCY)" in worker["args"]
    assert int(env["TARSY_WORKER_CONCURRENCY"]) >= 1
    # The pool the settings size database connections for is the one the worker runs.
    assert worker["args"][worker["args"].index("-P") + 1] == "$(TARSY_WORKER_POOL)"
    assert env["TARSY_WORKER_POOL"] == "threads"
    assert "livenessProbe" in worker
    beat = _by_kind("Deployment")["tarsy-beat"]
    assert beat["spec"]["replicas"] == 1 and beat["spec"]["strategy"]["type"] == "Recreate"
    assert _container(beat)["command"][:4] == ["celery", "-A", "tarsy", "beat"]


def test_every_pod_mounts_the_config_and_reads_env_and_secrets():
    pods = [d["spec"]["template"]["spec"] for d in _by_kind("Deployment").values()]
    pods += [j["spec"]["template"]["spec"] for j in _by_kind("Job").values()]
    secret = _by_kind("Secret")["tarsy-secrets"]["stringData"]
    assert {"SECRET_KEY", "DATABASE_URL", "REDIS_URL"} <= set(secret)
    for pod in pods:
        containers = [c for c in pod["containers"] if c["image"] == "tarsy"]
        assert containers
        for container in containers:
            refs = [next(iter(ref.values()))["name"] for ref in container["envFrom"]]
            assert refs == ["tarsy-env", "tarsy-secrets"]
            mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
            assert mounts["config"] == "/etc/tarsy"
        volumes = {v["name"]: v for v in pod["volumes"]}
        assert volumes["config"]["configMap"]["name"] == "tarsy-config"
        assert pod["securityContext"]["runAsNonRoot"] is True


def test_configmap_holds_a_valid_tarsy_configuration(tmp_path):
    from agents.config import load_config

    data = _by_kind("ConfigMap")["tarsy-config"]["data"]
    assert set(data) == {"tarsy.yaml", "llm-providers.yaml"}
    for name, text in data.items():
        (tmp_path / name).write_text(text)
    config = load_config(tmp_path, env={"GOOGLE_API_KEY": "placeholder"})
    assert config.queue.max_concurrent_sessions >= 1
    assert _by_kind("ConfigMap")["tarsy-env"]["data"]["TARSY_CONFIG_DIR"] == "/etc/tarsy"


def test_every_web_server_runs_the_options_the_tests_run(compose):
    """The tests and benchmarks measure uvicorn with UVICORN_OPTIONS; production must run exactly those."""
    import json

    from tests.support.processes import UVICORN_OPTIONS

    dockerfile = re.search(r"^CMD (\[.*\])$", (DEPLOY / "Dockerfile").read_text(), flags=re.M).group(1)
    commands = {
        "compose": compose["services"]["web"]["command"],
        "k8s": _container(_by_kind("Deployment")["tarsy-web"])["command"],
        "Dockerfile": json.loads(dockerfile),
    }
    for where, command in commands.items():
        assert " ".join(UVICORN_OPTIONS) in " ".join(command), where


QUIET_WORKER = ("--without-gossip", "--without-mingle")  # TARSy uses neither; gossip logs a traceback per reconnect


def test_every_worker_command_runs_without_gossip_and_mingle(compose):
    commands = {
        "compose": compose["services"]["worker"]["command"][-1].split(),
        "k8s": _container(_by_kind("Deployment")["tarsy-worker"])["args"],
        "tests": worker_command(),
    }
    for where, command in commands.items():
        assert set(QUIET_WORKER) <= set(command), where
    readme_row = next(line for line in (DEPLOY / "README.md").read_text().splitlines() if line.startswith("| worker"))
    assert all(option in readme_row for option in QUIET_WORKER)
