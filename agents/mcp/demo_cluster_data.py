"""The demo cluster's objects, logs and events: one consistent incident.

Scenario: in namespace `shop` the database pod `orders-db-0` keeps getting
OOMKilled at its 256Mi memory limit; while it restarts and replays WAL it
refuses connections, so the freshly scheduled web pod `web-7d9c8b6f5-x2k4q`
fails its startup database check and sits in CrashLoopBackOff. Everything
else is healthy. The names below are constants so tests can assert against them.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from typing import Any

NOW = datetime(2025, 6, 3, 14, 30, 0, tzinfo=UTC)  # fixed so ages and timestamps never drift

INCIDENT_NAMESPACE = "shop"
CRASHING_POD = "web-7d9c8b6f5-x2k4q"
CRASHING_RESTARTS = 14
CRASHING_EXIT_CODE = 1
DB_POD = "orders-db-0"
DB_HOST = "orders-db"
DB_RESTARTS = 6
DB_MEMORY_LIMIT = "256Mi"
DB_FATAL_LINE = "FATAL could not connect to database orders-db:5432: connection refused"
SECRET_NAME = "orders-db-credentials"
KUBECONFIG_CONFIGMAP = "legacy-kubeconfig"

NAMESPACES = ["default", "kube-node-lease", "kube-public", "kube-system", "shop"]
NAMESPACE_AGE = {"default": 41, "kube-node-lease": 41, "kube-public": 41, "kube-system": 41, "shop": 38}  # days


def ts(ago: timedelta) -> str:
    """RFC 3339 timestamp `ago` before NOW, as the API server writes it."""
    return (NOW - ago).strftime("%Y-%m-%dT%H:%M:%SZ")


def _uid(seed: str) -> str:
    """Stable UID-shaped id per object name (real UIDs are random; ours must not change between runs)."""
    h = hashlib.sha1(seed.encode()).hexdigest()
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:32]}"


def _container_status(
    name: str, image: str, restarts: int, state: dict[str, Any], last: dict[str, Any]
) -> dict[str, Any]:
    running = "running" in state
    return {
        "containerID": f"containerd://{_uid(name + image).replace('-', '')}",
        "image": image,
        "imageID": f"{image.split(':')[0]}@sha256:{_uid(image).replace('-', '')}{_uid(name).replace('-', '')[:32]}",
        "lastState": last,
        "name": name,
        "ready": bool(state.get("ready", False)),
        "restartCount": restarts,
        "started": running,
        "state": {k: v for k, v in state.items() if k != "ready"},
    }


def _pod(
    namespace: str,
    name: str,
    app: str,
    image: str,
    node: str,
    ip: str,
    age: timedelta,
    *,
    container: str | None = None,
    owner: tuple[str, str] | None = None,
    restarts: int = 0,
    state: dict[str, Any] | None = None,
    last_state: dict[str, Any] | None = None,
    resources: dict[str, Any] | None = None,
    env: list[dict[str, Any]] | None = None,
    ready: bool = True,
    port: int | None = None,
) -> dict[str, Any]:
    container = container or app
    state = state or {"running": {"startedAt": ts(age - timedelta(seconds=8))}, "ready": ready}
    spec_container: dict[str, Any] = {
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "name": container,
        "resources": resources or {"requests": {"cpu": "50m", "memory": "64Mi"}},
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
    }
    if port:
        spec_container["ports"] = [{"containerPort": port, "name": "http", "protocol": "TCP"}]
    if env:
        spec_container["env"] = env
    condition_ready = "True" if ready else "False"
    metadata: dict[str, Any] = {
        "creationTimestamp": ts(age),
        "labels": {"app": app},
        "name": name,
        "namespace": namespace,
        "uid": _uid(namespace + "/" + name),
    }
    if owner:
        metadata["ownerReferences"] = [
            {
                "apiVersion": "apps/v1",
                "blockOwnerDeletion": True,
                "controller": True,
                "kind": owner[0],
                "name": owner[1],
            }
        ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {
            "containers": [spec_container],
            "dnsPolicy": "ClusterFirst",
            "nodeName": node,
            "restartPolicy": "Always",
            "serviceAccountName": "default",
        },
        "status": {
            "conditions": [
                {"lastTransitionTime": ts(age), "status": "True", "type": "PodScheduled"},
                {"lastTransitionTime": ts(age), "status": "True", "type": "Initialized"},
                {
                    "lastTransitionTime": ts(age if ready else timedelta(minutes=4)),
                    "status": condition_ready,
                    "type": "ContainersReady",
                },
                {
                    "lastTransitionTime": ts(age if ready else timedelta(minutes=4)),
                    "status": condition_ready,
                    "type": "Ready",
                },
            ],
            "containerStatuses": [_container_status(container, image, restarts, state, last_state or {})],
            "hostIP": {"worker-1": "10.0.1.11", "worker-2": "10.0.1.12", "control-plane": "10.0.1.10"}[node],
            "phase": "Running",
            "podIP": ip,
            "qosClass": "Burstable",
            "startTime": ts(age),
        },
    }


_WEB_IMAGE = "registry.example.com/shop/web:2.14.1"
_WEB_ENV = [
    {"name": "DB_HOST", "value": "orders-db"},
    {"name": "DB_PORT", "value": "5432"},
    {"name": "DB_USER", "valueFrom": {"secretKeyRef": {"key": "username", "name": SECRET_NAME}}},
    {"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"key": "password", "name": SECRET_NAME}}},
]
_WEB_OWNER = ("ReplicaSet", "web-7d9c8b6f5")
_DB_LIMITS = {"limits": {"cpu": "500m", "memory": DB_MEMORY_LIMIT}, "requests": {"cpu": "250m", "memory": "128Mi"}}

PODS: list[dict[str, Any]] = [
    _pod(
        "shop",
        "web-7d9c8b6f5-m8r2n",
        "web",
        _WEB_IMAGE,
        "worker-1",
        "10.244.1.23",
        timedelta(days=2, hours=3),
        owner=_WEB_OWNER,
        env=_WEB_ENV,
        port=8080,
    ),
    _pod(
        "shop",
        "web-7d9c8b6f5-p5w7z",
        "web",
        _WEB_IMAGE,
        "worker-1",
        "10.244.1.24",
        timedelta(days=2, hours=3),
        owner=_WEB_OWNER,
        env=_WEB_ENV,
        port=8080,
    ),
    _pod(
        "shop",
        CRASHING_POD,
        "web",
        _WEB_IMAGE,
        "worker-2",
        "10.244.2.31",
        timedelta(minutes=52),
        owner=_WEB_OWNER,
        env=_WEB_ENV,
        port=8080,
        restarts=CRASHING_RESTARTS,
        ready=False,
        state={
            "waiting": {
                "message": f"back-off 5m0s restarting failed container=web pod={CRASHING_POD}_shop"
                f"({_uid('shop/' + CRASHING_POD)})",
                "reason": "CrashLoopBackOff",
            }
        },
        last_state={
            "terminated": {
                "containerID": f"containerd://{_uid('web-previous').replace('-', '')}",
                "exitCode": CRASHING_EXIT_CODE,
                "finishedAt": ts(timedelta(minutes=1, seconds=49)),
                "reason": "Error",
                "startedAt": ts(timedelta(minutes=2)),
            }
        },
    ),
    _pod(
        "shop",
        DB_POD,
        "orders-db",
        "postgres:16.3",
        "worker-1",
        "10.244.1.17",
        timedelta(days=3, hours=5),
        container="postgres",
        owner=("StatefulSet", "orders-db"),
        restarts=DB_RESTARTS,
        ready=False,
        resources=_DB_LIMITS,
        env=[
            {"name": "POSTGRES_DB", "value": "orders"},
            {"name": "POSTGRES_PASSWORD", "valueFrom": {"secretKeyRef": {"key": "password", "name": SECRET_NAME}}},
            {"name": "PGDATA", "value": "/var/lib/postgresql/data/pgdata"},
        ],
        state={"running": {"startedAt": ts(timedelta(minutes=4, seconds=12))}, "ready": False},
        last_state={
            "terminated": {
                "containerID": f"containerd://{_uid('db-previous').replace('-', '')}",
                "exitCode": 137,
                "finishedAt": ts(timedelta(minutes=4, seconds=14)),
                "reason": "OOMKilled",
                "startedAt": ts(timedelta(minutes=11, seconds=40)),
            }
        },
    ),
    _pod(
        "shop",
        "cart-5f6d8c9b7-qt9wz",
        "cart",
        "registry.example.com/shop/cart:1.8.0",
        "worker-2",
        "10.244.2.12",
        timedelta(days=6),
        owner=("ReplicaSet", "cart-5f6d8c9b7"),
        port=8080,
    ),
    _pod(
        "shop",
        "payments-6b8f7d4c9-h2jkl",
        "payments",
        "registry.example.com/shop/payments:3.2.4",
        "worker-2",
        "10.244.2.14",
        timedelta(days=6),
        owner=("ReplicaSet", "payments-6b8f7d4c9"),
        port=8443,
    ),
    _pod(
        "kube-system",
        "coredns-5d78c9869d-7xk2p",
        "kube-dns",
        "registry.k8s.io/coredns/coredns:v1.11.1",
        "control-plane",
        "10.244.0.2",
        timedelta(days=41),
        container="coredns",
        owner=("ReplicaSet", "coredns-5d78c9869d"),
    ),
    _pod(
        "kube-system",
        "coredns-5d78c9869d-9tq4m",
        "kube-dns",
        "registry.k8s.io/coredns/coredns:v1.11.1",
        "control-plane",
        "10.244.0.3",
        timedelta(days=41),
        container="coredns",
        owner=("ReplicaSet", "coredns-5d78c9869d"),
    ),
    _pod(
        "kube-system",
        "kube-proxy-2xw8r",
        "kube-proxy",
        "registry.k8s.io/kube-proxy:v1.30.2",
        "worker-1",
        "10.0.1.11",
        timedelta(days=41),
        owner=("DaemonSet", "kube-proxy"),
    ),
    _pod(
        "kube-system",
        "kube-proxy-5bn4k",
        "kube-proxy",
        "registry.k8s.io/kube-proxy:v1.30.2",
        "worker-2",
        "10.0.1.12",
        timedelta(days=41),
        owner=("DaemonSet", "kube-proxy"),
    ),
    _pod(
        "kube-system",
        "etcd-control-plane",
        "etcd",
        "registry.k8s.io/etcd:3.5.12-0",
        "control-plane",
        "10.0.1.10",
        timedelta(days=41),
    ),
    _pod(
        "kube-system",
        "kube-apiserver-control-plane",
        "kube-apiserver",
        "registry.k8s.io/kube-apiserver:v1.30.2",
        "control-plane",
        "10.0.1.10",
        timedelta(days=41),
    ),
]


def _log(lines: list[tuple[timedelta, str]]) -> str:
    return "\n".join(f"{ts(ago)[:-1]}.{i * 37 % 1000:03d}Z {text}" for i, (ago, text) in enumerate(lines)) + "\n"


def _web_startup(start: timedelta) -> list[tuple[timedelta, str]]:
    s = lambda seconds: start - timedelta(seconds=seconds)  # noqa: E731 - seconds after container start
    lines = [
        (s(0), "INFO  starting web 2.14.1 (commit 9f3e2ab, go1.22.4)"),
        (s(0), "INFO  loading configuration from /etc/web/config.yaml"),
        (s(0), "INFO  http server will listen on :8080 once dependencies are ready"),
        (s(0), "INFO  connecting to database orders-db:5432 (database=orders, user=orders_app)"),
    ]
    for attempt in range(1, 6):
        lines.append(
            (
                s(attempt * 2),
                f"WARN  database connection attempt {attempt}/5 failed: "
                "dial tcp 10.96.41.17:5432: connect: connection refused",
            )
        )
    return lines


LOGS: dict[tuple[str, str, bool], str] = {
    ("shop", CRASHING_POD, True): _log(
        _web_startup(timedelta(minutes=2))
        + [
            (timedelta(minutes=1, seconds=49), DB_FATAL_LINE),
            (timedelta(minutes=1, seconds=49), "INFO  shutting down: startup dependency check failed (exit code 1)"),
        ]
    ),
    ("shop", CRASHING_POD, False): _log(_web_startup(timedelta(seconds=10))[:6]),
    ("shop", "web-7d9c8b6f5-m8r2n", False): _log(
        [
            (timedelta(minutes=9), "INFO  GET /api/orders/81723 200 14ms"),
            (
                timedelta(minutes=4, seconds=14),
                "WARN  lost connection to orders-db:5432: unexpected EOF; pool will retry",
            ),
            (timedelta(minutes=3), "ERROR GET /api/orders/81731 503 2004ms: database unavailable"),
            (timedelta(minutes=1), "INFO  GET /healthz 200 1ms"),
        ]
    ),
    ("shop", DB_POD, True): _log(
        [
            (timedelta(minutes=11, seconds=38), "LOG:  database system is ready to accept connections"),
            (timedelta(minutes=8), "LOG:  checkpoint starting: time"),
            (
                timedelta(minutes=5),
                "LOG:  duration: 18312.441 ms  statement: SELECT o.*, li.* FROM orders o "
                "JOIN line_items li ON li.order_id = o.id ORDER BY o.created_at DESC",
            ),
            (
                timedelta(minutes=4, seconds=20),
                'LOG:  temporary file: path "base/pgsql_tmp/pgsql_tmp388.3", size 187695104',
            ),
        ]
    ),
    ("shop", DB_POD, False): _log(
        [
            (
                timedelta(minutes=4, seconds=11),
                "LOG:  database system was interrupted; last known up at 2025-06-03 14:25:12 UTC",
            ),
            (
                timedelta(minutes=4, seconds=10),
                "LOG:  database system was not properly shut down; automatic recovery in progress",
            ),
            (timedelta(minutes=4, seconds=9), "LOG:  redo starts at 0/3A2B1C8"),
            (timedelta(seconds=30), "FATAL:  the database system is starting up"),
        ]
    ),
}


def _event(ns: str, kind: str, name: str, type_: str, reason: str, message: str, ago: timedelta) -> dict[str, Any]:
    """Shaped like kubernetes-mcp-server's event summaries (Go `time.String()` timestamps)."""
    when = (NOW - ago).strftime("%Y-%m-%d %H:%M:%S +0000 UTC")
    api = "apps/v1" if kind in ("StatefulSet", "Deployment", "ReplicaSet") else "v1"
    return {
        "InvolvedObject": {"Kind": kind, "Name": name, "apiVersion": api},
        "Message": message,
        "Namespace": ns,
        "Reason": reason,
        "Timestamp": when,
        "Type": type_,
    }


EVENTS: list[dict[str, Any]] = [
    _event(
        "shop",
        "Pod",
        DB_POD,
        "Warning",
        "Unhealthy",
        "Liveness probe failed: 127.0.0.1:5432 - no response",
        timedelta(minutes=27),
    ),
    _event(
        "shop",
        "Pod",
        DB_POD,
        "Normal",
        "Killing",
        "Container postgres failed liveness probe, will be restarted",
        timedelta(minutes=26),
    ),
    _event(
        "default",
        "Node",
        "worker-1",
        "Warning",
        "OOMKilling",
        "Memory cgroup out of memory: Killed process 48211 (postgres) total-vm:1183424kB, anon-rss:261872kB, "
        "file-rss:0kB, shmem-rss:12044kB, UID:999 pgtables:1024kB oom_score_adj:984",
        timedelta(minutes=4, seconds=14),
    ),
    _event(
        "shop",
        "Pod",
        DB_POD,
        "Normal",
        "Pulled",
        'Container image "postgres:16.3" already present on machine',
        timedelta(minutes=4, seconds=13),
    ),
    _event("shop", "Pod", DB_POD, "Normal", "Started", "Started container postgres", timedelta(minutes=4, seconds=12)),
    _event(
        "shop",
        "Pod",
        DB_POD,
        "Warning",
        "Unhealthy",
        "Readiness probe failed: 127.0.0.1:5432 - rejecting connections",
        timedelta(seconds=40),
    ),
    _event(
        "shop",
        "StatefulSet",
        "orders-db",
        "Warning",
        "Unhealthy",
        "0 of 1 replicas ready; pod orders-db-0 restarted 6 times (last state: OOMKilled)",
        timedelta(minutes=4),
    ),
    _event(
        "shop",
        "Pod",
        CRASHING_POD,
        "Normal",
        "Pulled",
        f'Container image "{_WEB_IMAGE}" already present on machine',
        timedelta(minutes=2),
    ),
    _event(
        "shop",
        "Pod",
        CRASHING_POD,
        "Warning",
        "BackOff",
        f"Back-off restarting failed container web in pod {CRASHING_POD}_shop({_uid('shop/' + CRASHING_POD)})",
        timedelta(seconds=20),
    ),
    _event(
        "kube-system",
        "Pod",
        "coredns-5d78c9869d-7xk2p",
        "Normal",
        "Pulled",
        'Container image "registry.k8s.io/coredns/coredns:v1.11.1" already present on machine',
        timedelta(days=41),
    ),
]


def _meta(ns: str | None, name: str, age: timedelta, **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"creationTimestamp": ts(age), "name": name}
    if ns:
        meta["namespace"] = ns
    meta["uid"] = _uid(f"{ns}/{name}")
    meta.update(extra)
    return meta


def _workload(kind: str, ns: str, name: str, replicas: int, ready: int, age: timedelta) -> dict[str, Any]:
    status: dict[str, Any] = {"observedGeneration": 4, "readyReplicas": ready, "replicas": replicas}
    if kind == "Deployment":
        status.update(availableReplicas=ready, unavailableReplicas=replicas - ready, updatedReplicas=replicas)
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": _meta(ns, name, age, generation=4, labels={"app": name}),
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}}},
        "status": status,
    }


# Fake credentials (not real keys): visible in the raw tool output so masking can be seen at work.
_LEGACY_CA_DATA = (
    "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJkekNDQVIyZ0F3SUJBZ0lCQURBS0JnZ3Foa2pPUFFRREFqQWpNU0V3SHdZRFZRUUREQmhy"
    "TTNNdGMyVnkKZG1WeUxXTmhRREUzTVRjd01EQXdNREF3SGhjTk1qUXdOakF6TURBd01EQXdXaGNOTXpRd05qQXhNREF3TURBdwotLS0tLUVORCBD"
    "RVJUSUZJQ0FURS0tLS0tCg=="
)
_LEGACY_TOKEN = (
    "eyJhbGciOiJSUzI1NiIsImtpZCI6IjRmM2EifQ.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6c2hvcDpyZXBvcnRpbmctYm90In0"
    ".c2lnbmF0dXJlLW5vdC1yZWFsLWRlbW8tb25seQ"
)
_LEGACY_KUBECONFIG = f"""apiVersion: v1
kind: Config
clusters:
- cluster:
    certificate-authority-data: {_LEGACY_CA_DATA}
    server: https://10.0.1.10:6443
  name: shop-legacy
contexts:
- context:
    cluster: shop-legacy
    user: reporting-bot
  name: shop-legacy
current-context: shop-legacy
users:
- name: reporting-bot
  user:
    token: {_LEGACY_TOKEN}
"""

RESOURCES: dict[tuple[str, str], list[dict[str, Any]]] = {
    ("v1", "Pod"): PODS,
    ("v1", "Namespace"): [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": _meta(None, ns, timedelta(days=NAMESPACE_AGE[ns]), labels={"kubernetes.io/metadata.name": ns}),
            "status": {"phase": "Active"},
        }
        for ns in NAMESPACES
    ],
    ("v1", "Node"): [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": _meta(None, node, timedelta(days=41), labels={"kubernetes.io/hostname": node}),
            "status": {
                "allocatable": {"cpu": "4", "memory": "15896Mi", "pods": "110"},
                "conditions": [
                    {"type": "Ready", "status": "True", "reason": "KubeletReady"},
                    {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory"},
                ],
                "nodeInfo": {"kubeletVersion": "v1.30.2", "containerRuntimeVersion": "containerd://1.7.18"},
            },
        }
        for node in ("control-plane", "worker-1", "worker-2")
    ],
    ("apps/v1", "Deployment"): [
        _workload("Deployment", "shop", "web", 3, 2, timedelta(days=38)),
        _workload("Deployment", "shop", "cart", 1, 1, timedelta(days=38)),
        _workload("Deployment", "shop", "payments", 1, 1, timedelta(days=38)),
        _workload("Deployment", "kube-system", "coredns", 2, 2, timedelta(days=41)),
    ],
    ("apps/v1", "StatefulSet"): [_workload("StatefulSet", "shop", "orders-db", 1, 0, timedelta(days=38))],
    ("v1", "Service"): [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": _meta("shop", name, timedelta(days=38)),
            "spec": {
                "clusterIP": ip,
                "ports": [{"port": port, "protocol": "TCP", "targetPort": port}],
                "selector": {"app": name},
                "type": "ClusterIP",
            },
        }
        for name, ip, port in (
            ("web", "10.96.12.40", 8080),
            ("orders-db", "10.96.41.17", 5432),
            ("cart", "10.96.12.77", 8080),
            ("payments", "10.96.13.5", 8443),
        )
    ],
    ("v1", "Secret"): [
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "data": {"password": "c2hvcC1vcmRlcnMtZGItUzNjcjN0IQ==", "username": "b3JkZXJzX2FwcA=="},
            "metadata": _meta("shop", SECRET_NAME, timedelta(days=38)),
            "type": "Opaque",
        },
    ],
    ("v1", "ConfigMap"): [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "data": {"DB_HOST": "orders-db", "DB_PORT": "5432", "LOG_LEVEL": "info", "STARTUP_DB_CHECK": "required"},
            "metadata": _meta("shop", "web-config", timedelta(days=38)),
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "data": {"kubeconfig": _LEGACY_KUBECONFIG},
            "metadata": _meta("shop", KUBECONFIG_CONFIGMAP, timedelta(days=120)),
        },
    ],
}
