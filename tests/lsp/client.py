"""A small LSP client over a subprocess's pipes: JSON-RPC with Content-Length framing.

It sends requests and notifications, and a thread reads every message the server writes into
a queue, from which `request` takes its response and `notification` the next notification of
a method. Used by the tests and by bench/lsp_latency.py.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

SERVER = [sys.executable, "-m", "neuron_migrate", "lsp"]


class LspClient:
    def __init__(self, cwd: Path | None = None, command: list[str] | None = None) -> None:
        self.process = subprocess.Popen(
            command or SERVER,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
        )
        self.messages: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.held: list[dict[str, Any]] = []  # read while waiting for another message
        self.next_id = 0
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        stream = self.process.stdout
        assert stream is not None
        while True:
            length = None
            while True:
                line = stream.readline()
                if not line:
                    self.messages.put(None)
                    return
                if line in (b"\r\n", b"\n"):
                    break
                name, _, value = line.decode("ascii").partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            assert length is not None
            self.messages.put(json.loads(stream.read(length)))

    def send_raw(self, body: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()

    def send(self, message: dict[str, Any]) -> None:
        self.send_raw(json.dumps({"jsonrpc": "2.0", **message}).encode("utf-8"))

    def notify(self, method: str, params: Any) -> None:
        self.send({"method": method, "params": params})

    def request(self, method: str, params: Any, timeout: float = 60) -> Any:
        """The response's result; an error response raises."""
        self.next_id += 1
        wanted = self.next_id
        self.send({"id": wanted, "method": method, "params": params})
        message = self._take(lambda m: m.get("id") == wanted and "method" not in m, timeout)
        if "error" in message:
            raise RuntimeError(f"{method}: {message['error']}")
        return message.get("result")

    def notification(self, method: str, timeout: float = 60, **match: Any) -> dict[str, Any]:
        """The params of the next notification `method` whose params hold `match`."""

        def wanted(m: dict[str, Any]) -> bool:
            params = m.get("params") or {}
            return m.get("method") == method and all(params.get(k) == v for k, v in match.items())

        return self._take(wanted, timeout)["params"]

    def _take(self, wanted: Any, timeout: float) -> dict[str, Any]:
        for at, message in enumerate(self.held):
            if wanted(message):
                return self.held.pop(at)
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no such message from the server")
            try:
                message = self.messages.get(timeout=left)
            except queue.Empty:
                raise TimeoutError("no such message from the server") from None
            if message is None:
                raise EOFError("the server closed its output")
            if "method" in message and "id" in message:  # a request of the server's: answer it
                self.send({"id": message["id"], "result": None})
            if wanted(message):
                return message
            self.held.append(message)

    def initialize(self, root: Path, capabilities: dict[str, Any] | None = None) -> Any:
        result = self.request(
            "initialize",
            {
                "processId": None,
                "rootUri": root.as_uri(),
                "workspaceFolders": [{"uri": root.as_uri(), "name": root.name}],
                "capabilities": capabilities or {},
            },
        )
        self.notify("initialized", {})
        return result

    def open(self, path: Path, text: str, language: str = "python", version: int = 1) -> None:
        item = {"uri": path.as_uri(), "languageId": language, "version": version, "text": text}
        self.notify("textDocument/didOpen", {"textDocument": item})

    def change(self, path: Path, text: str, version: int) -> None:
        """The whole text as the document's new content."""
        self.notify(
            "textDocument/didChange",
            {
                "textDocument": {"uri": path.as_uri(), "version": version},
                "contentChanges": [{"text": text}],
            },
        )

    def stop(self, timeout: float = 30) -> int:
        """`shutdown` then `exit`: the server's exit code."""
        self.request("shutdown", None)
        self.notify("exit", None)
        return self.process.wait(timeout)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
