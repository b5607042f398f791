"""A stdio MCP server's stderr: read off a pipe, logged at DEBUG, its first lines kept to say why a server failed.

Inherited, a server's stderr went straight to TARSy's console: ~40 lines of usage text from a server that cannot
start, again at every health check. Read here, it stays out of the console, and a server that does not start is
reported with the reason it gave (its first error line), not only "connection closed".
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import threading
from typing import TextIO

logger = logging.getLogger(__name__)

KEEP_LINES = 40  # enough for a usage text; what a reason is picked from
LAST_WORDS_WAIT_S = 1.0  # a server that exited has closed the pipe by then; one still running says no more
_ERROR_LINE = re.compile(r"error|fatal|fail|panic|cannot|unable", re.IGNORECASE)
_NEEDS_CLUSTER = re.compile(r"KUBERNETES_MASTER|kubeconfig|in-cluster config", re.IGNORECASE)


class ServerStderr:
    """One spawned server's stderr. `writer` is the child's stderr; `spawned()` once the child has it."""

    def __init__(self, server: str, env: dict[str, str]) -> None:
        read_fd, write_fd = os.pipe()
        self.server = server
        self.writer: TextIO = os.fdopen(write_fd, "w")
        self._env = env
        self._lines: list[str] = []
        self._reader = threading.Thread(target=self._read, args=(os.fdopen(read_fd, errors="replace"),),
                                        name=f"mcp-stderr-{server}", daemon=True)
        self._reader.start()

    def spawned(self) -> None:
        """The child holds its own copy of the pipe: ours closes, so the reader ends when the child does."""
        self.writer.close()

    def _read(self, reader: TextIO) -> None:
        with reader:
            for raw in reader:
                line = raw.rstrip()
                if not line:
                    continue
                if len(self._lines) < KEEP_LINES:
                    self._lines.append(line)
                logger.debug("MCP server %r stderr: %s", self.server, line)

    async def reason(self) -> str:
        """Why the server said it failed: a missing cluster configuration named, else its first error line (else
        its first line); "" when it said nothing."""
        await asyncio.to_thread(self._reader.join, LAST_WORDS_WAIT_S)
        lines = list(self._lines)
        if not lines:
            return ""
        said = next((line for line in lines if _ERROR_LINE.search(line)), lines[0]).strip()[:300]
        if "KUBECONFIG" not in self._env and any(_NEEDS_CLUSTER.search(line) for line in lines):
            return f"KUBECONFIG is not set (server said: {said})"
        return f"server said: {said}"
