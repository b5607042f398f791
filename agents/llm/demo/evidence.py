"""Reading the conversation and the tool output it contains, for the demo investigator.

Everything is derived from the messages alone (the next iteration may run in
another process): which tools are offered, which calls were made and what they
returned, and the facts those results hold (pods, pod details, events, logs).
Parsers accept the kubectl-style tables and YAML of kubernetes-mcp-server.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from agents.llm.types import ConversationMessage, LLMRequest

KNOWN_TOOLS = (
    "pods_list_in_namespace",
    "pods_list",
    "pods_get",
    "pods_log",
    "events_list",
    "resources_get",
    "resources_list",
    "namespaces_list",
    "execute_query",  # a Prometheus (agents.mcp.demo_metrics, prometheus-mcp-server)
    "list_metrics",
    "dispatch_agent",  # an orchestrator's (tarsy.pipeline.sub_agents)
    "list_agents",
    "cancel_agent",
)
_TOOL_NAME = re.compile(r"\b([A-Za-z0-9][\w\-]*)\.(" + "|".join(KNOWN_TOOLS) + r")\b")
_REACT_ACTION = re.compile(r"^\s*Action:\s*(?P<tool>\S+)\s*$(?:\s*^\s*Action Input:\s*(?P<input>.*))?", re.M | re.S)
_ERROR_START = re.compile(r"^\s*(?:error|failed|tool error|\[masking failed)", re.I)
# Pod STATUS values that mean "look here first", most severe first.
BAD_STATUSES = (
    "CrashLoopBackOff",
    "OOMKilled",
    "Error",
    "ImagePullBackOff",
    "ErrImagePull",
    "CreateContainerConfigError",
    "CreateContainerError",
    "Init:CrashLoopBackOff",
    "Evicted",
    "Pending",
    "ContainerCreating",
    "Terminating",
    "Unknown",
)
_LOG_SIGNAL = re.compile(
    r"\b(?:FATAL|ERROR|PANIC|panic|Exception|Traceback|refused|timed? ?out|OOM|Killed|"
    r"no such host|denied)\b"
)
_DEPENDENCY = re.compile(
    r"(?:connect(?:ing|ion)? to|reach|dial tcp|lookup)\s+(?:the\s+)?(?:database|server|host|service)?\s*"
    r"(?P<host>[a-z][a-z0-9\-]*(?:\.[a-z0-9\-]+)*):(?P<port>\d{2,5})",
    re.I,
)


@dataclass
class Observation:
    """One tool call and what came back."""

    tool: str
    arguments: dict[str, Any]
    text: str
    is_error: bool
    evidence_id: str = ""  # what a report cites for it ("" when the result came without one)

    @property
    def short(self) -> str:
        return self.tool.rsplit(".", 1)[-1]


@dataclass
class Conversation:
    """What the demo investigator knows: offered tools, the alert, and the tool observations so far."""

    tools: dict[str, str]  # short name -> canonical `server.tool`
    native: bool
    alert: str
    observations: list[Observation] = field(default_factory=list)
    call_count: int = 0

    def attempted(self, short: str, **args: Any) -> list[Observation]:
        return [
            o for o in self.observations if o.short == short and all(o.arguments.get(k) == v for k, v in args.items())
        ]


def looks_like_error(text: str) -> bool:
    return bool(_ERROR_START.match(text)) or text.strip().startswith("Error executing tool")


def _offered_tools(request: LLMRequest) -> dict[str, str]:
    if request.tools:
        names = [t.name for t in request.tools]
    else:
        text = "\n".join(m.content for m in request.messages if m.role == "system")
        names = [f"{server}.{tool}" for server, tool in _TOOL_NAME.findall(text)]
    offered: dict[str, str] = {}
    for name in names:
        offered.setdefault(name.rsplit(".", 1)[-1], name)
    return offered


def _parse_input(raw: str | None) -> dict[str, Any]:
    raw = (raw or "").strip()
    try:
        value, _ = json.JSONDecoder().raw_decode(raw)
        return value if isinstance(value, dict) else {}
    except json.JSONDecodeError:
        return {}


def read_conversation(request: LLMRequest) -> Conversation:
    """Pair every tool request in the history with its result (native tool messages or ReAct observations)."""
    user_texts = [m.content for m in request.messages if m.role == "user" and not _is_observation(m)]
    conv = Conversation(
        tools=_offered_tools(request), native=bool(request.tools), alert=user_texts[0] if user_texts else ""
    )
    pending: dict[str, tuple[str, dict[str, Any]]] = {}
    react_pending: tuple[str, dict[str, Any]] | None = None
    for message in request.messages:
        if message.role == "assistant":
            for call in message.tool_calls:
                pending[call.id] = (call.name, call.arguments)
                conv.call_count += 1
            match = _REACT_ACTION.search(message.content) if not message.tool_calls else None
            if match and "Final Answer:" not in message.content:
                react_pending = (match.group("tool"), _parse_input(match.group("input")))
                conv.call_count += 1
        elif message.role == "tool":
            name, args = pending.pop(message.tool_call_id or "", (message.tool_name or "", {}))
            evidence, text = _tool_response_parts(message.content)
            conv.observations.append(Observation(name, args, text, looks_like_error(text), evidence))
        elif _is_observation(message) and react_pending:
            text, failed = _observation_body(message.content)
            conv.observations.append(Observation(react_pending[0], react_pending[1], text, failed,
                                                 _evidence_in(message.content.split("\n", 1)[0])))
            react_pending = None
    return conv


_EVIDENCE_HEAD = re.compile(r"^Evidence \[(E\d+)\][^\n]*\n?")


def _evidence_in(head: str) -> str:
    match = re.search(r"Evidence \[(E\d+)\]", head)
    return match.group(1) if match else ""


def _tool_response_parts(content: str) -> tuple[str, str]:
    """A native tool response: its evidence id (head line, see agents.prompts.builder.tool_output) and output (the
    fenced block under it)."""
    match = _EVIDENCE_HEAD.match(content)
    fenced = _FENCED.search(content)
    output = fenced.group("body") if fenced else content[match.end():] if match else content
    return (match.group(1) if match else ""), output


_FENCED = re.compile(r"^(?P<fence>`{3,})[^\n]*\n(?P<body>.*?)\n(?P=fence)\s*$", re.S | re.M)


def _observation_body(content: str) -> tuple[str, bool]:
    """The tool output of an observation: the fenced block when there is one (the prompt builder fences it as
    data under a head line), else everything after `Observation:`. Errors are marked in the head."""
    text = content.strip().split(":", 1)[1].strip()
    fenced = _FENCED.search(text)
    head = text[: fenced.start()] if fenced else ""
    body = fenced.group("body") if fenced else text
    return body, "ERROR" in head or looks_like_error(body)


def _is_observation(message: ConversationMessage) -> bool:
    return message.role == "user" and message.content.lstrip().startswith("Observation:")


# ---- facts in tool output ---------------------------------------------------------------------


@dataclass
class PodRow:
    namespace: str
    name: str
    ready: str
    status: str
    restarts: int
    node: str = ""
    labels: dict[str, str] = field(default_factory=dict)

    @property
    def not_ready(self) -> bool:
        done, _, total = self.ready.partition("/")
        return bool(total) and done != total and self.status not in ("Completed", "Succeeded")

    @property
    def unhealthy(self) -> bool:
        return self.status not in ("Running", "Completed", "Succeeded") or self.not_ready or self.restarts > 0

    @property
    def workload(self) -> str:
        """The workload the pod belongs to: its `app` label, else its name without the controller's suffixes."""
        return self.labels.get("app") or workload_of(self.name)

    def belongs_to(self, workload: str) -> bool:
        """Whether the pod is one of `workload`'s: by its app label, or by its name (`<workload>-<suffix>`)."""
        rest = self.name[len(workload) + 1 :] if self.name.startswith(workload + "-") else ""
        return workload in (self.workload, workload_of(self.name)) or bool(_POD_SUFFIX.fullmatch(rest))

    def states(self) -> set[str]:
        """Its STATUS plus the derived states alert symptoms are matched against (see alert.SYMPTOMS)."""
        derived = {self.status}
        if self.restarts:
            derived.add("restarting-not-ready" if self.not_ready else "restarting-ready")
        elif self.not_ready and self.status == "Running":
            derived.add("not-ready")
        return derived


_POD_SUFFIX = re.compile(r"(?:[a-z0-9]{8,10}-)?[a-z0-9]{5}|\d+")  # what a controller appends to a pod's name


def workload_of(pod: str) -> str:
    """`web` from `web-7d9c8b6f5-x2k4q` (Deployment), `orders-db` from `orders-db-0` (StatefulSet)."""
    for pattern in (r"^(.+)-[a-z0-9]{8,10}-[a-z0-9]{5}$", r"^(.+)-\d+$", r"^(.+)-[a-z0-9]{5}$"):
        match = re.match(pattern, pod)
        if match:
            return match.group(1)
    return pod

    def severity(self) -> int:
        return BAD_STATUSES.index(self.status) if self.status in BAD_STATUSES else len(BAD_STATUSES)


def parse_pod_table(text: str) -> list[PodRow]:
    """Rows of a kubectl-style pod table, sliced by the header's column positions."""
    lines = [line for line in text.splitlines() if line.strip()]
    header_index = next((i for i, line in enumerate(lines) if re.search(r"\bNAME\b.*\bSTATUS\b", line)), None)
    if header_index is None:
        return _parse_pod_yaml(text)
    header = lines[header_index]
    starts = [m.start() for m in re.finditer(r"\S+(?: \S+)*", header)]
    names = [m.group(0) for m in re.finditer(r"\S+(?: \S+)*", header)]
    rows = []
    for line in lines[header_index + 1 :]:
        cells = {
            names[i]: line[start : starts[i + 1] if i + 1 < len(starts) else None].strip()
            for i, start in enumerate(starts)
        }
        restarts = re.match(r"\d+", cells.get("RESTARTS", "0"))
        labels = dict(pair.split("=", 1) for pair in cells.get("LABELS", "").split(",") if "=" in pair)
        if cells.get("NAME"):
            rows.append(
                PodRow(
                    cells.get("NAMESPACE", ""),
                    cells["NAME"],
                    cells.get("READY", ""),
                    cells.get("STATUS", ""),
                    int(restarts.group(0)) if restarts else 0,
                    cells.get("NODE", ""),
                    labels,
                )
            )
    return rows


def _parse_pod_yaml(text: str) -> list[PodRow]:
    doc = load_yaml(text)
    items = doc.get("items", []) if isinstance(doc, dict) else doc if isinstance(doc, list) else []
    return [pod_row(item) for item in items if isinstance(item, dict) and item.get("kind", "Pod") == "Pod"]


def pod_row(pod: dict[str, Any]) -> PodRow:
    meta, status = pod.get("metadata", {}), pod.get("status", {})
    statuses = status.get("containerStatuses") or []
    phase = status.get("reason") or status.get("phase", "Unknown")
    for s in statuses if not status.get("reason") else ():
        phase = (s.get("state", {}).get("waiting") or s.get("state", {}).get("terminated") or {}).get("reason", phase)
    ready = f"{sum(1 for s in statuses if s.get('ready'))}/{len(statuses)}"
    return PodRow(
        meta.get("namespace", ""), meta.get("name", ""), ready, phase, sum(s.get("restartCount", 0) for s in statuses),
        (pod.get("spec") or {}).get("nodeName", ""), meta.get("labels") or {},
    )


_YAML_START = re.compile(r"^(?:- |[\w.\-/]+:(?:\s|$)|\{|\[)", re.M)


def load_yaml(text: str) -> Any:
    """YAML (or JSON) from its first structural line on (tools prefix prose); None when it does not parse."""
    match = _YAML_START.search(text)
    try:
        return yaml.safe_load(text[match.start() :] if match else text)
    except yaml.YAMLError:
        return None


@dataclass
class PodDetail:
    name: str
    container: str = ""
    last_reason: str = ""
    last_exit_code: int | None = None
    waiting_reason: str = ""
    waiting_message: str = ""
    memory_limit: str = ""
    cpu_limit: str = ""
    image: str = ""
    node: str = ""
    owner: tuple[str, str] = ("", "")  # (kind, name) of the controller
    reason: str = ""  # pod-level (Evicted) and its message
    message: str = ""
    probes: tuple[str, ...] = ()
    restarts: int = 0


def parse_pod_detail(text: str) -> PodDetail | None:
    pod = load_yaml(text)
    if not isinstance(pod, dict) or not isinstance(pod.get("metadata"), dict) or pod.get("kind", "Pod") != "Pod":
        return None
    meta, spec, status = pod["metadata"], pod.get("spec") or {}, pod.get("status") or {}
    detail = PodDetail(name=meta.get("name", ""), node=spec.get("nodeName", ""), reason=status.get("reason", ""),
                       message=str(status.get("message", "")).strip())
    owners = [o for o in meta.get("ownerReferences") or [] if isinstance(o, dict)]
    if owners:
        detail.owner = (owners[0].get("kind", ""), owners[0].get("name", ""))
    containers = spec.get("containers") or [{}]
    limits = (containers[0].get("resources") or {}).get("limits") or {}
    detail.memory_limit, detail.cpu_limit = str(limits.get("memory", "")), str(limits.get("cpu", ""))
    detail.image = str(containers[0].get("image", ""))
    detail.probes = tuple(k for k in ("livenessProbe", "readinessProbe", "startupProbe") if k in containers[0])
    for container in status.get("containerStatuses") or []:
        detail.container = container.get("name", "")
        detail.restarts = container.get("restartCount", 0)
        terminated = (container.get("lastState") or {}).get("terminated") or {}
        detail.last_reason = terminated.get("reason", "")
        detail.last_exit_code = terminated.get("exitCode")
        waiting = (container.get("state") or {}).get("waiting") or {}
        detail.waiting_reason, detail.waiting_message = waiting.get("reason", ""), str(waiting.get("message", ""))
    return detail


@dataclass
class NodeFact:
    name: str
    problems: list[str]  # conditions that are not as they should be, as "DiskPressure=True (message)"
    taints: list[str]


_HEALTHY_CONDITION = {"Ready": "True"}  # every other node condition (…Pressure, NetworkUnavailable) should be False


def parse_node(text: str) -> NodeFact | None:
    node = load_yaml(text)
    if not isinstance(node, dict) or node.get("kind") != "Node":
        return None
    problems = [
        f"{c.get('type')}={c.get('status')}" + (f" ({c['message']})" if c.get("message") else "")
        for c in (node.get("status") or {}).get("conditions") or []
        if isinstance(c, dict) and c.get("status") != _HEALTHY_CONDITION.get(c.get("type"), "False")
    ]
    if (node.get("spec") or {}).get("unschedulable"):
        problems.append("SchedulingDisabled (cordoned)")
    taints = [f"{t.get('key')}:{t.get('effect')}" for t in (node.get("spec") or {}).get("taints") or []
              if isinstance(t, dict)]
    return NodeFact(str((node.get("metadata") or {}).get("name", "")), problems, taints)


def listed_names(text: str) -> list[str]:
    """The NAME column of a `resources_list` table."""
    lines = [line for line in text.splitlines() if line.strip()]
    column = next((match for line in lines if (match := re.search(r"\bNAME\b", line))), None)
    if column is None:
        return []
    header, start = column.string, column.start()
    return [line[start:].split()[0] for line in lines[lines.index(header) + 1 :] if len(line) > start]


@dataclass
class EventFact:
    type: str
    reason: str
    object: str
    message: str


def parse_events(text: str) -> list[EventFact]:
    doc = load_yaml(text)
    items = doc.get("items", []) if isinstance(doc, dict) else doc if isinstance(doc, list) else []
    facts = []
    for item in items:
        if not isinstance(item, dict):
            continue
        lower = {k.lower(): v for k, v in item.items()}
        involved = {k.lower(): v for k, v in (lower.get("involvedobject") or {}).items()}
        facts.append(
            EventFact(
                str(lower.get("type", "")),
                str(lower.get("reason", "")),
                str(involved.get("name", "")),
                str(lower.get("message", "")).strip(),
            )
        )
    return facts


def is_signal(line: str) -> bool:
    """A log line that reports a failure (error, refusal, timeout, kill)."""
    return bool(_LOG_SIGNAL.search(line))


def log_highlights(text: str, limit: int = 4) -> list[str]:
    """The log lines that explain a failure (fatal errors first), else the last lines."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    signal = [line for line in lines if _LOG_SIGNAL.search(line)]
    fatal = [line for line in signal if re.search(r"FATAL|PANIC|panic|Traceback", line)]
    chosen = (fatal + [line for line in signal if line not in fatal])[:limit]
    return chosen or lines[-limit:]


_NO_SUCH_HOST = re.compile(r"lookup (?P<host>[a-z0-9][a-z0-9\-.]*) on [\d.:]+: no such host")
MISSING_REFERENCE = re.compile(r'(?P<kind>secret|configmap)s? "(?P<name>[a-z0-9][a-z0-9\-.]*)" not found', re.I)


def unresolved_host(text: str) -> str:
    """A name the logs say DNS could not resolve (`lookup stock-cache.inventory.svc… on …: no such host`)."""
    match = _NO_SUCH_HOST.search(text)
    return match.group("host") if match else ""


def dependency_host(text: str) -> str:
    """The host a failing component could not reach (`orders-db` from `connect to database orders-db:5432`)."""
    for line in reversed(log_highlights(text, limit=10)):
        match = _DEPENDENCY.search(line)
        if match and not re.match(r"\d", match.group("host")):
            return match.group("host").split(".")[0]
    return ""
