"""Prometheus metrics (served at /metrics)."""

from prometheus_client import Counter, Gauge, Histogram

SESSIONS_SUBMITTED = Counter("tarsy_sessions_submitted_total", "Alerts accepted", ["alert_type"])
SESSIONS_TERMINAL = Counter("tarsy_sessions_terminal_total", "Sessions that reached a terminal status", ["status"])
ITERATION_SECONDS = Histogram("tarsy_iteration_duration_seconds", "Agent iteration duration", ["strategy"])
LLM_CALLS = Counter("tarsy_llm_calls_total", "LLM calls", ["provider", "model", "outcome"])
LLM_TOKENS = Counter("tarsy_llm_tokens_total", "LLM tokens", ["provider", "model", "kind"])
LLM_SECONDS = Histogram("tarsy_llm_call_duration_seconds", "LLM call duration", ["provider", "model"])
MCP_CALLS = Counter("tarsy_mcp_calls_total", "MCP tool calls", ["server", "tool", "outcome"])
MCP_SECONDS = Histogram("tarsy_mcp_call_duration_seconds", "MCP call duration", ["server", "tool"])
WS_CONNECTIONS = Gauge("tarsy_ws_connections_active", "Open WebSocket connections")
