"""Every process that counts metrics is scraped: each worker's endpoint and web's, in compose and Kubernetes."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.unit.deploy.test_deploy_files import _by_kind, _container

ROOT = Path(__file__).resolve().parents[3]
DEPLOY = ROOT / "deploy"


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text())


def test_compose_workers_serve_metrics_and_prometheus_scrapes_web_and_every_worker(compose):
    env = compose["services"]["worker"]["environment"]
    port = int(env["TARSY_METRICS_PORT"])
    assert env["PROMETHEUS_MULTIPROC_DIR"].startswith("/tmp/")  # on the tmpfs: fresh at each container start
    prometheus = compose["services"]["prometheus"]
    assert prometheus["network_mode"] == "service:web"  # web's /metrics listens on loopback only
    mounted = {v.split(":")[1]: v.split(":")[0] for v in prometheus["volumes"] if v.startswith("./")}
    config = yaml.safe_load((DEPLOY / mounted["/etc/prometheus/prometheus.yml"]).read_text())
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    web_port = compose["services"]["web"]["command"][compose["services"]["web"]["command"].index("--port") + 1]
    assert jobs["tarsy-web"]["static_configs"][0]["targets"] == [f"127.0.0.1:{web_port}"]
    [sd] = jobs["tarsy-worker"]["dns_sd_configs"]
    assert (sd["names"], sd["type"], sd["port"]) == (["worker"], "A", port)


def test_k8s_worker_and_web_pods_expose_a_metrics_port_that_annotations_name():
    env = _by_kind("ConfigMap")["tarsy-env"]["data"]
    port = int(env["TARSY_METRICS_PORT"])
    assert env["PROMETHEUS_MULTIPROC_DIR"].startswith("/tmp/")
    for name, container_name in (("tarsy-worker", None), ("tarsy-web", "metrics")):
        deployment = _by_kind("Deployment")[name]
        annotations = deployment["spec"]["template"]["metadata"]["annotations"]
        assert annotations["prometheus.io/scrape"] == "true"
        assert int(annotations["prometheus.io/port"]) == port and annotations["prometheus.io/path"] == "/metrics"
        container = _container(deployment, container_name)
        assert {"name": "metrics", "containerPort": port} in container["ports"]
        assert {"name": "tmp", "mountPath": "/tmp"} in container["volumeMounts"]  # the multiprocess directory


def test_k8s_web_metrics_container_shares_the_web_processes_directory_and_pids():
    deployment = _by_kind("Deployment")["tarsy-web"]
    pod = deployment["spec"]["template"]["spec"]
    metrics, web = _container(deployment, "metrics"), _container(deployment)
    assert metrics["command"] == ["python", "manage.py", "serve_metrics"]
    assert [m for m in metrics["volumeMounts"] if m["name"] == "tmp"] == [
        m for m in web["volumeMounts"] if m["name"] == "tmp"]
    assert pod["shareProcessNamespace"] is True  # file names carry PIDs: they must not repeat across containers


def test_podmonitor_selects_tarsy_pods_by_their_metrics_port():
    monitor = yaml.safe_load((DEPLOY / "k8s" / "monitoring" / "podmonitor.yaml").read_text())
    assert (monitor["apiVersion"], monitor["kind"]) == ("monitoring.coreos.com/v1", "PodMonitor")
    selector = monitor["spec"]["selector"]["matchLabels"]
    for name in ("tarsy-worker", "tarsy-web"):
        labels = _by_kind("Deployment")[name]["spec"]["template"]["metadata"]["labels"]
        assert selector.items() <= labels.items()
    assert [e["port"] for e in monitor["spec"]["podMetricsEndpoints"]] == ["metrics"]
