"""The demo cluster's objects, logs and events: six consistent incidents, one per namespace.

Main scenario: in namespace `shop` the database pod `orders-db-0` keeps getting
OOMKilled at its 256Mi memory limit; while it restarts and replays WAL it
refuses connections, so the freshly scheduled web pod `web-7d9c8b6f5-x2k4q`
fails its startup database check and sits in CrashLoopBackOff. The other five
(a missing Secret, a bad image tag, CPU throttling, node disk pressure, a
Service name that does not resolve) are described where their objects start.
Everything else is healthy. The names are constants so tests can assert against them.
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

NAMESPACES = [
    "analytics", "billing", "default", "inventory", "kube-node-lease", "kube-public", "kube-system", "logging",
    "search", "shop",
]
NAMESPACE_AGE = {"default": 41, "kube-node-lease": 41, "kube-public": 41, "kube-system": 41, "shop": 38,
                 "analytics": 33, "billing": 30, "inventory": 27, "logging": 40, "search": 21}  # days
NODE_IPS = {"control-plane": "10.0.1.10", "worker-1": "10.0.1.11", "worker-2": "10.0.1.12", "worker-3": "10.0.1.13"}


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
    probes: dict[str, Any] | None = None,
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
    spec_container.update(probes or {})
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
            "hostIP": NODE_IPS[node],
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


def _workload(
    kind: str, ns: str, name: str, replicas: int, ready: int, age: timedelta, *, image: str = "",
    revision: int = 4, conditions: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    status: dict[str, Any] = {"observedGeneration": revision, "readyReplicas": ready, "replicas": replicas}
    if kind == "Deployment":
        status.update(availableReplicas=ready, unavailableReplicas=replicas - ready, updatedReplicas=replicas)
    if conditions:
        status["conditions"] = conditions
    spec: dict[str, Any] = {"replicas": replicas, "selector": {"matchLabels": {"app": name}}}
    if image:
        spec["template"] = {"metadata": {"labels": {"app": name}},
                            "spec": {"containers": [{"image": image, "name": name}]}}
    meta = _meta(ns, name, age, generation=revision, labels={"app": name})
    if kind == "Deployment":
        meta["annotations"] = {"deployment.kubernetes.io/revision": str(revision)}
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": meta,
        "spec": spec,
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

# ---- further incidents: one namespace each, so different alerts lead to different answers ----------------------
#
# billing:   a rollout references Secret `invoice-smtp-credentials`, which does not exist
#            (the credentials live in `smtp-credentials`): CreateContainerConfigError.
# analytics: a rollout to image tag 2.9.0, which was never pushed: ImagePullBackOff; the old ReplicaSet serves.
# search:    search-api runs at a 250m CPU limit, is throttled in most CFS periods, answers /healthz too slowly
#            and is restarted by its liveness probe.
# logging:   log-shipper on worker-3 buffers to disk while Elasticsearch rejects it; the node reaches
#            DiskPressure, the kubelet evicts the pod, and the node is tainted.
# inventory: the new inventory-api config points its cache at `stock-cache`, a Service that does not exist
#            (it is `stock-redis`): DNS says no such host, readiness fails, the pods never become Ready.

MISSING_SECRET_POD = "invoice-worker-6c9f8d7b5-k7m2p"
MISSING_SECRET = "invoice-smtp-credentials"
BAD_TAG_POD = "report-api-7f4b9c6d8-w2x5v"
BAD_IMAGE = "registry.example.com/analytics/report-api:2.9.0"
THROTTLED_POD = "search-api-6d8f9b7c5-h4n8q"
THROTTLED_CPU_LIMIT = "250m"
PRESSURED_NODE = "worker-3"
EVICTED_POD = "log-shipper-7xk2m"
NOT_READY_POD = "inventory-api-5c7d9f6b8-n3k7w"
UNRESOLVED_HOST = "stock-cache.inventory.svc.cluster.local"


def _waiting(reason: str, message: str) -> dict[str, Any]:
    return {"waiting": {"reason": reason, "message": message}, "ready": False}


def _killed(ago: timedelta, ran: timedelta, reason: str = "Error", code: int = 143) -> dict[str, Any]:
    return {"terminated": {"exitCode": code, "finishedAt": ts(ago), "reason": reason, "startedAt": ts(ago + ran)}}


_INVOICE_ENV = [
    {"name": "SMTP_HOST", "value": "smtp.mail.example.com"},
    {"name": "SMTP_USER", "valueFrom": {"secretKeyRef": {"key": "username", "name": MISSING_SECRET}}},
    {"name": "SMTP_PASSWORD", "valueFrom": {"secretKeyRef": {"key": "password", "name": MISSING_SECRET}}},
]
_HTTP_PROBE = {"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 10, "timeoutSeconds": 1,
               "failureThreshold": 3}
_SEARCH_LIMITS = {"limits": {"cpu": THROTTLED_CPU_LIMIT, "memory": "1Gi"}, "requests": {"cpu": "250m", "memory": "1Gi"}}
_INVENTORY_PROBE = {"readinessProbe": {"httpGet": {"path": "/readyz", "port": 8080}, "periodSeconds": 5,
                                       "timeoutSeconds": 1, "failureThreshold": 3}}

PODS += [
    _pod("billing", "invoice-worker-5b8d7c6f4-zx8qw", "invoice-worker", "registry.example.com/billing/invoice:4.1.2",
         "worker-1", "10.244.1.41", timedelta(days=9), owner=("ReplicaSet", "invoice-worker-5b8d7c6f4"),
         env=[{"name": "SMTP_HOST", "value": "smtp.mail.example.com"},
              {"name": "SMTP_PASSWORD",
               "valueFrom": {"secretKeyRef": {"key": "password", "name": "smtp-credentials"}}}]),
    *(
        _pod("billing", name, "invoice-worker", "registry.example.com/billing/invoice:4.2.0", node, ip,
             timedelta(minutes=25), owner=("ReplicaSet", "invoice-worker-6c9f8d7b5"), env=_INVOICE_ENV, ready=False,
             state=_waiting("CreateContainerConfigError", f'secret "{MISSING_SECRET}" not found'))
        for name, node, ip in ((MISSING_SECRET_POD, "worker-2", "10.244.2.52"),
                               ("invoice-worker-6c9f8d7b5-r4t9x", "worker-1", "10.244.1.58"))
    ),
    _pod("billing", "ledger-api-7d4f8b9c6-p2m5k", "ledger-api", "registry.example.com/billing/ledger:2.3.7",
         "worker-2", "10.244.2.44", timedelta(days=12), owner=("ReplicaSet", "ledger-api-7d4f8b9c6"), port=8080),
    *(
        _pod("analytics", name, "report-api", "registry.example.com/analytics/report-api:2.8.4", node, ip,
             timedelta(days=4), owner=("ReplicaSet", "report-api-5d6c7b8a9"), port=8080)
        for name, node, ip in (("report-api-5d6c7b8a9-f7g2h", "worker-1", "10.244.1.61"),
                               ("report-api-5d6c7b8a9-l3q8d", "worker-2", "10.244.2.63"))
    ),
    _pod("analytics", BAD_TAG_POD, "report-api", BAD_IMAGE, "worker-2", "10.244.2.70", timedelta(minutes=34),
         owner=("ReplicaSet", "report-api-7f4b9c6d8"), port=8080, ready=False,
         state=_waiting("ImagePullBackOff", f'Back-off pulling image "{BAD_IMAGE}"')),
    _pod("search", THROTTLED_POD, "search-api", "registry.example.com/search/search-api:5.0.3", "worker-1",
         "10.244.1.77", timedelta(hours=6), owner=("ReplicaSet", "search-api-6d8f9b7c5"), port=8080, restarts=5,
         resources=_SEARCH_LIMITS, probes={"livenessProbe": _HTTP_PROBE},
         state={"running": {"startedAt": ts(timedelta(minutes=6))}, "ready": True},
         last_state=_killed(timedelta(minutes=6, seconds=2), timedelta(minutes=31))),
    _pod("search", "search-api-6d8f9b7c5-t2v6m", "search-api", "registry.example.com/search/search-api:5.0.3",
         "worker-2", "10.244.2.78", timedelta(hours=6), owner=("ReplicaSet", "search-api-6d8f9b7c5"), port=8080,
         restarts=3, resources=_SEARCH_LIMITS, probes={"livenessProbe": _HTTP_PROBE},
         state={"running": {"startedAt": ts(timedelta(minutes=48))}, "ready": True},
         last_state=_killed(timedelta(minutes=48, seconds=2), timedelta(minutes=55))),
    _pod("logging", EVICTED_POD, "log-shipper", "registry.example.com/logging/log-shipper:3.4.1", PRESSURED_NODE,
         "10.244.3.12", timedelta(days=11), owner=("DaemonSet", "log-shipper"), ready=False,
         state={"terminated": {"exitCode": 137, "finishedAt": ts(timedelta(minutes=18)),
                               "reason": "ContainerStatusUnknown", "startedAt": ts(timedelta(days=11))}}),
    _pod("logging", "log-shipper-q9p4s", "log-shipper", "registry.example.com/logging/log-shipper:3.4.1",
         PRESSURED_NODE, "10.244.3.19", timedelta(minutes=17), owner=("DaemonSet", "log-shipper")),
    _pod("logging", "log-shipper-b2c8n", "log-shipper", "registry.example.com/logging/log-shipper:3.4.1", "worker-1",
         "10.244.1.12", timedelta(days=11), owner=("DaemonSet", "log-shipper")),
    _pod("logging", "log-shipper-m5t7w", "log-shipper", "registry.example.com/logging/log-shipper:3.4.1", "worker-2",
         "10.244.2.9", timedelta(days=11), owner=("DaemonSet", "log-shipper")),
    *(
        _pod("inventory", name, "inventory-api", "registry.example.com/inventory/inventory-api:1.12.0", node, ip,
             timedelta(minutes=40), owner=("ReplicaSet", "inventory-api-5c7d9f6b8"), port=8080, ready=False,
             probes=_INVENTORY_PROBE, env=[{"name": "CACHE_URL", "valueFrom": {"configMapKeyRef": {
                 "key": "CACHE_URL", "name": "inventory-api-config"}}}])
        for name, node, ip in ((NOT_READY_POD, "worker-3", "10.244.3.25"),
                               ("inventory-api-5c7d9f6b8-z5q2r", "worker-1", "10.244.1.88"))
    ),
    _pod("inventory", "stock-redis-0", "stock-redis", "redis:7.2.5", "worker-2", "10.244.2.90", timedelta(days=27),
         container="redis", owner=("StatefulSet", "stock-redis"), port=6379),
]
_EVICTED = next(p for p in PODS if p["metadata"]["name"] == EVICTED_POD)
_EVICTED["status"].update(
    phase="Failed", reason="Evicted",
    message="The node was low on resource: ephemeral-storage. Threshold quantity: 10%, available: 4%. Container "
            "log-shipper was using 41Gi, request is 0, has larger consumption of ephemeral-storage. ",
)

LOGS.update({
    ("search", THROTTLED_POD, True): _log([
        (timedelta(minutes=37), "INFO  search-api 5.0.3 starting (GOMAXPROCS=1 from cgroup cpu quota 25000/100000)"),
        (timedelta(minutes=36), "INFO  loaded index shards 8/8 (11.2 GiB) in 61.4s"),
        (timedelta(minutes=12), "WARN  slow request GET /search?q=winter+jacket 4821ms (budget 800ms)"),
        (timedelta(minutes=9), "WARN  cpu throttled in 547 of 600 periods over the last 60s (91%), throttled "
                               "time 118.4s; cgroup cpu limit 250m"),
        (timedelta(minutes=7), "WARN  slow request GET /healthz 3120ms (budget 1000ms)"),
        (timedelta(minutes=6, seconds=3), "INFO  received SIGTERM, shutting down (in-flight requests: 41)"),
    ]),
    ("search", THROTTLED_POD, False): _log([
        (timedelta(minutes=6), "INFO  search-api 5.0.3 starting (GOMAXPROCS=1 from cgroup cpu quota 25000/100000)"),
        (timedelta(minutes=4), "INFO  loaded index shards 8/8 (11.2 GiB) in 118.9s"),
        (timedelta(minutes=1), "WARN  cpu throttled in 562 of 600 periods over the last 60s (94%), throttled "
                               "time 131.0s; cgroup cpu limit 250m"),
    ]),
    ("logging", "log-shipper-q9p4s", False): _log([
        (timedelta(minutes=17), "INFO  log-shipper 3.4.1: tailing /var/log/containers/*.log on worker-3"),
        (timedelta(minutes=16), "WARN  output elasticsearch: POST https://logs-es.logging:9200/_bulk 429 Too Many "
                                "Requests (es_rejected_execution_exception)"),
        (timedelta(minutes=15), "WARN  spooling to disk buffer /var/lib/log-shipper/buffer (limit: none)"),
        (timedelta(minutes=2), "WARN  disk buffer at 6.2Gi and growing; 1,204,331 chunks pending"),
    ]),
    ("inventory", NOT_READY_POD, False): _log([
        (timedelta(minutes=40), "INFO  inventory-api 1.12.0 listening on :8080"),
        (timedelta(minutes=40), f"INFO  cache backend redis://{UNRESOLVED_HOST}:6379 (from CACHE_URL)"),
        (timedelta(minutes=39), f"ERROR readiness: cache check failed: dial tcp: lookup {UNRESOLVED_HOST} on "
                                "10.96.0.10:53: no such host"),
        (timedelta(seconds=5), f"ERROR readiness: cache check failed: dial tcp: lookup {UNRESOLVED_HOST} on "
                               "10.96.0.10:53: no such host"),
        (timedelta(seconds=5), "INFO  GET /readyz 503 2ms"),
    ]),
})

EVENTS += [
    _event("billing", "Deployment", "invoice-worker", "Normal", "ScalingReplicaSet",
           "Scaled up replica set invoice-worker-6c9f8d7b5 to 2", timedelta(minutes=25)),
    *(
        _event("billing", "Pod", pod, "Warning", "Failed", f'Error: secret "{MISSING_SECRET}" not found',
               timedelta(minutes=1))
        for pod in (MISSING_SECRET_POD, "invoice-worker-6c9f8d7b5-r4t9x")
    ),
    _event("analytics", "Deployment", "report-api", "Normal", "ScalingReplicaSet",
           "Scaled up replica set report-api-7f4b9c6d8 to 1", timedelta(minutes=34)),
    _event("analytics", "Pod", BAD_TAG_POD, "Normal", "Pulling", f'Pulling image "{BAD_IMAGE}"', timedelta(minutes=3)),
    _event("analytics", "Pod", BAD_TAG_POD, "Warning", "Failed",
           f'Failed to pull image "{BAD_IMAGE}": rpc error: code = NotFound desc = failed to pull and unpack image '
           f'"{BAD_IMAGE}": failed to resolve reference "{BAD_IMAGE}": {BAD_IMAGE}: not found', timedelta(minutes=3)),
    _event("analytics", "Pod", BAD_TAG_POD, "Normal", "BackOff", f'Back-off pulling image "{BAD_IMAGE}"',
           timedelta(seconds=50)),
    _event("analytics", "Pod", BAD_TAG_POD, "Warning", "Failed", "Error: ImagePullBackOff", timedelta(seconds=50)),
    _event("search", "Pod", THROTTLED_POD, "Warning", "Unhealthy",
           'Liveness probe failed: Get "http://10.244.1.77:8080/healthz": context deadline exceeded '
           "(Client.Timeout exceeded while awaiting headers)", timedelta(minutes=6, seconds=20)),
    _event("search", "Pod", THROTTLED_POD, "Normal", "Killing",
           "Container search-api failed liveness probe, will be restarted", timedelta(minutes=6, seconds=3)),
    _event("default", "Node", PRESSURED_NODE, "Normal", "NodeHasDiskPressure",
           f"Node {PRESSURED_NODE} status is now: NodeHasDiskPressure", timedelta(minutes=21)),
    _event("default", "Node", PRESSURED_NODE, "Warning", "FreeDiskSpaceFailed",
           "Failed to garbage collect required amount of images. Attempted to free 9254432768 bytes, but only found "
           "1263210496 bytes eligible to free.", timedelta(minutes=20)),
    _event("default", "Node", PRESSURED_NODE, "Warning", "EvictionThresholdMet",
           "Attempting to reclaim ephemeral-storage", timedelta(minutes=19)),
    _event("logging", "Pod", EVICTED_POD, "Warning", "Evicted",
           "The node was low on resource: ephemeral-storage. Threshold quantity: 10%, available: 4%. Container "
           "log-shipper was using 41Gi, request is 0, has larger consumption of ephemeral-storage.",
           timedelta(minutes=18)),
    *(
        _event("inventory", "Pod", pod, "Warning", "Unhealthy",
               "Readiness probe failed: HTTP probe failed with statuscode: 503", timedelta(seconds=10))
        for pod in (NOT_READY_POD, "inventory-api-5c7d9f6b8-z5q2r")
    ),
]


def _node(name: str, pressure: bool = False) -> dict[str, Any]:
    disk = ("True", "KubeletHasDiskPressure", "kubelet has disk pressure") if pressure else (
        "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure")
    node: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": _meta(None, name, timedelta(days=41), labels={"kubernetes.io/hostname": name}),
        "spec": {},
        "status": {
            "addresses": [{"address": NODE_IPS[name], "type": "InternalIP"}],
            "allocatable": {"cpu": "4", "ephemeral-storage": "95551679124", "memory": "15896Mi", "pods": "110"},
            "conditions": [
                {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory",
                 "message": "kubelet has sufficient memory available"},
                {"type": "DiskPressure", "status": disk[0], "reason": disk[1], "message": disk[2],
                 "lastTransitionTime": ts(timedelta(minutes=21) if pressure else timedelta(days=41))},
                {"type": "PIDPressure", "status": "False", "reason": "KubeletHasSufficientPID",
                 "message": "kubelet has sufficient PID available"},
                {"type": "Ready", "status": "True", "reason": "KubeletReady",
                 "message": "kubelet is posting ready status"},
            ],
            "nodeInfo": {"kubeletVersion": "v1.30.2", "containerRuntimeVersion": "containerd://1.7.18"},
        },
    }
    if pressure:
        node["spec"]["taints"] = [{"effect": "NoSchedule", "key": "node.kubernetes.io/disk-pressure",
                                   "timeAdded": ts(timedelta(minutes=21))}]
    return node


def _service(ns: str, name: str, ip: str, port: int, age: timedelta) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(ns, name, age),
        "spec": {
            "clusterIP": ip,
            "ports": [{"port": port, "protocol": "TCP", "targetPort": port}],
            "selector": {"app": name},
            "type": "ClusterIP",
        },
    }


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
    ("v1", "Node"): [_node(name, pressure=name == PRESSURED_NODE) for name in NODE_IPS],
    ("apps/v1", "Deployment"): [
        _workload("Deployment", "shop", "web", 3, 2, timedelta(days=38)),
        _workload("Deployment", "shop", "cart", 1, 1, timedelta(days=38)),
        _workload("Deployment", "shop", "payments", 1, 1, timedelta(days=38)),
        _workload("Deployment", "kube-system", "coredns", 2, 2, timedelta(days=41)),
        _workload("Deployment", "billing", "invoice-worker", 2, 1, timedelta(days=30),
                  image="registry.example.com/billing/invoice:4.2.0", revision=9),
        _workload("Deployment", "billing", "ledger-api", 1, 1, timedelta(days=30)),
        _workload("Deployment", "analytics", "report-api", 2, 2, timedelta(days=33), image=BAD_IMAGE, revision=7,
                  conditions=[{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"},
                              {"type": "Progressing", "status": "True", "reason": "ReplicaSetUpdated",
                               "message": 'ReplicaSet "report-api-7f4b9c6d8" is progressing.'}]),
        _workload("Deployment", "search", "search-api", 2, 2, timedelta(days=21),
                  image="registry.example.com/search/search-api:5.0.3"),
        _workload("Deployment", "inventory", "inventory-api", 2, 0, timedelta(days=27),
                  image="registry.example.com/inventory/inventory-api:1.12.0", revision=12),
    ],
    ("apps/v1", "StatefulSet"): [
        _workload("StatefulSet", "shop", "orders-db", 1, 0, timedelta(days=38)),
        _workload("StatefulSet", "inventory", "stock-redis", 1, 1, timedelta(days=27)),
    ],
    ("apps/v1", "DaemonSet"): [_workload("DaemonSet", "logging", "log-shipper", 3, 3, timedelta(days=40))],
    ("v1", "Service"): [
        _service(ns, name, ip, port, timedelta(days=age))
        for ns, name, ip, port, age in (
            ("shop", "web", "10.96.12.40", 8080, 38),
            ("shop", "orders-db", "10.96.41.17", 5432, 38),
            ("shop", "cart", "10.96.12.77", 8080, 38),
            ("shop", "payments", "10.96.13.5", 8443, 38),
            ("billing", "ledger-api", "10.96.22.8", 8080, 30),
            ("analytics", "report-api", "10.96.31.4", 8080, 33),
            ("search", "search-api", "10.96.51.19", 8080, 21),
            ("inventory", "inventory-api", "10.96.60.2", 8080, 27),
            ("inventory", "stock-redis", "10.96.60.9", 6379, 27),
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
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "data": {"password": "aW52b2ljZS1zbXRwLVMzY3IzdA==", "username": "aW52b2ljZS1ib3Q="},
            "metadata": _meta("billing", "smtp-credentials", timedelta(days=30)),
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
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "data": {"CACHE_URL": f"redis://{UNRESOLVED_HOST}:6379", "LOG_LEVEL": "info"},
            "metadata": _meta("inventory", "inventory-api-config", timedelta(minutes=41)),
        },
    ],
}
