"""A recording stub of an OpenAI-compatible server, for offline tests of the ``openai`` provider.

It serves ``POST /v1/chat/completions`` and ``GET /v1/models`` on 127.0.0.1 (a free port) from a
background thread, records every request, and answers from a queue of scripted responses::

    with StubOpenAI() as stub:
        stub.reply("hello").tool_call("search", {"q": "x"}).error(503).drop()
        model = ChatOpenAI(base_url=stub.base_url, api_key="k", max_retries=0)

When the queue is empty it answers ``default_text``, or what ``responder(body)`` returns (an
assistant message computed from the request: a double that answers by the request's kind),
or, with ``upstream`` set, it forwards the request to that real server and answers its
answer (a recording proxy: the tier records every prompt a real model was sent).

With ``n_ctx`` set it checks the context window first: prompt tokens are estimated as len(all
message text) / 4, and a request whose prompt tokens plus requested ``max_completion_tokens`` /
``max_tokens`` exceed ``n_ctx`` gets the 400 ``context_length_exceeded`` error (OpenAI's rule),
before any scripted response is used. With ``reserve_completion=False`` it follows llama-cpp-
python's server instead: only a prompt of ``n_ctx`` tokens or more is refused (the completion is
silently capped), and the message counts the body's ``max_tokens`` only, "None" when absent.
Only ``stream: false`` is served: a streamed request is recorded and answered with a 400 that
says so.
"""

from __future__ import annotations

import itertools
import json
import socket
import threading
import time
import urllib.error
import urllib.request
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

DEFAULT_MODEL = "stub-model"


@dataclass
class Recorded:
    """One request the stub received."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any = None  # the parsed JSON body, or None

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", [])) if isinstance(self.body, dict) else []


@dataclass
class Scripted:
    """One queued answer: a JSON body with a status, or a dropped connection; maybe delayed."""

    status: int = 200
    body: Any = None  # a dict answered as JSON; for 200s, the completion's message
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    drop: bool = False
    finish_reason: str = "stop"


def context_length_body(
    n_ctx: int, prompt_tokens: int, completion_tokens: int | None
) -> dict[str, Any]:
    """The 400 body llama-cpp-python's server (in OpenAI's words) answers for a too-long request."""
    total = prompt_tokens + (completion_tokens or 0)
    return {
        "error": {
            "message": (
                f"This model's maximum context length is {n_ctx} tokens. However, you requested "
                f"{total} tokens ({prompt_tokens} in the messages, {completion_tokens} in the "
                "completion). Please reduce the length of the messages or completion."
            ),
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    }


def message_text(messages: list[dict[str, Any]]) -> str:
    """All the text of ``messages``: contents (strings or text parts) and tool-call arguments."""
    parts: list[str] = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(str(p.get("text", "")) for p in content if isinstance(p, dict))
        for call in message.get("tool_calls") or []:
            function = call.get("function", {})
            parts.append(f"{function.get('name', '')}{function.get('arguments', '')}")
    return "".join(parts)


def estimate_tokens(text: str) -> int:
    return max(1, len(text) // 4) if text else 0


class StubOpenAI:
    """The stub server; use as a context manager (or call :meth:`start` / :meth:`stop`)."""

    def __init__(
        self,
        *,
        n_ctx: int | None = None,
        reserve_completion: bool = True,
        default_text: str = "stub reply",
        model: str = DEFAULT_MODEL,
        responder: Callable[[dict[str, Any]], dict[str, Any] | None] | None = None,
        upstream: str | None = None,
    ) -> None:
        self.responder = responder
        self.upstream = upstream.rstrip("/") if upstream else None
        self.n_ctx = n_ctx
        self.reserve_completion = reserve_completion
        self.default_text = default_text
        self.model = model
        self.requests: list[Recorded] = []
        self.forwarded: list[Any] = []  # upstream's answers, as received
        self._queue: deque[Scripted] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._ids = itertools.count(1)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- scripting ------------------------------------------------------------------------------

    def reply(self, text: str, *, delay: float = 0.0, finish_reason: str = "stop") -> StubOpenAI:
        """Queue a plain assistant text reply."""
        message = {"role": "assistant", "content": text}
        return self._push(Scripted(body=message, delay=delay, finish_reason=finish_reason))

    def tool_call(
        self, name: str, arguments: dict[str, Any] | str, *, content: str | None = None
    ) -> StubOpenAI:
        """Queue a reply that calls one tool (``arguments`` as a dict or a raw JSON string)."""
        return self.tool_calls([(name, arguments)], content=content)

    def tool_calls(
        self, calls: list[tuple[str, dict[str, Any] | str]], *, content: str | None = None
    ) -> StubOpenAI:
        """Queue a reply that calls several tools at once, OpenAI style."""
        tool_calls = [
            {
                "id": f"call_{next(self._ids)}",
                "type": "function",
                "function": {
                    "name": name,
                    "arguments": args if isinstance(args, str) else json.dumps(args),
                },
            }
            for name, args in calls
        ]
        message = {"role": "assistant", "content": content, "tool_calls": tool_calls}
        return self._push(Scripted(body=message, finish_reason="tool_calls"))

    def error(
        self,
        status: int,
        body: dict[str, Any] | str | None = None,
        *,
        headers: dict[str, str] | None = None,
    ) -> StubOpenAI:
        """Queue an HTTP error: ``body`` as the raw JSON, or a message for an OpenAI error body."""
        if not isinstance(body, dict):
            message = body or f"stub error {status}"
            body = {"error": {"message": message, "type": "server_error", "code": None}}
        return self._push(Scripted(status=status, body=body, headers=dict(headers or {})))

    def context_length_error(
        self, n_ctx: int = 4096, prompt_tokens: int = 4000, completion_tokens: int = 100
    ) -> StubOpenAI:
        """Queue the 400 ``context_length_exceeded`` error, whatever the request's length."""
        return self.error(400, context_length_body(n_ctx, prompt_tokens, completion_tokens))

    def delay(self, seconds: float) -> StubOpenAI:
        """Delay the next queued answer (or the default one) by ``seconds``."""
        return self._push(Scripted(status=0, delay=seconds))

    def drop(self) -> StubOpenAI:
        """Queue a dropped connection: the request is read, then the socket closes unanswered."""
        return self._push(Scripted(drop=True))

    def _push(self, item: Scripted) -> StubOpenAI:
        with self._lock:
            self._queue.append(item)
        return self

    @property
    def pending(self) -> int:
        """How many scripted answers are still queued."""
        with self._lock:
            return len(self._queue)

    @property
    def completions(self) -> list[Recorded]:
        """The recorded chat-completion requests, oldest first."""
        with self._lock:
            return [r for r in self.requests if r.path.endswith("/chat/completions")]

    # -- lifecycle ------------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("the stub is not started")
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def start(self) -> StubOpenAI:
        handler = type("Handler", (_Handler,), {"stub": self})
        self._server = _Server(("127.0.0.1", 0), handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name="stub-openai", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> StubOpenAI:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- answering ------------------------------------------------------------------------------

    def _record(self, request: Recorded) -> None:
        with self._lock:
            self.requests.append(request)

    def _next(self) -> Iterator[Scripted]:
        """Pop scripted answers: delays first (yielded as they come), then one real answer."""
        while True:
            with self._lock:
                item = self._queue.popleft() if self._queue else Scripted(body=None)
            yield item
            if item.status != 0:
                return

    def _sleep(self, seconds: float) -> None:
        if seconds > 0:
            self._stopping.wait(seconds)

    def answer(self, body: dict[str, Any]) -> Scripted:
        """The answer to one chat-completion ``body`` (sleeping through queued delays)."""
        if body.get("stream"):
            message = "stub_openai serves stream=false only; this request asked for stream=true"
            return Scripted(status=400, body={"error": {"message": message, "type": "stub"}})
        prompt_tokens = estimate_tokens(message_text(body.get("messages", [])))
        if (too_long := self._too_long(body, prompt_tokens)) is not None:
            return too_long
        for item in self._next():
            self._sleep(item.delay)
            if item.status == 0:
                continue
            if item.drop or item.status != 200:
                return item
            if item.body is None and self.upstream is not None:
                return self._forward(body)
            message = item.body or (self.responder(body) if self.responder else None)
            message = message or {"role": "assistant", "content": self.default_text}
            return Scripted(body=self._completion(body, message, item, prompt_tokens))
        raise AssertionError("unreachable")  # pragma: no cover

    def _forward(self, body: dict[str, Any]) -> Scripted:
        """The upstream server's answer to ``body``, status and JSON as it sent them."""
        request = urllib.request.Request(
            f"{self.upstream}/chat/completions",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=600) as response:
                answer = json.load(response)
            with self._lock:
                self.forwarded.append(answer)
            return Scripted(status=200, body=answer)
        except urllib.error.HTTPError as error:
            raw = error.read()
            try:
                answer = json.loads(raw)
            except ValueError:
                answer = {"error": {"message": raw.decode(errors="replace")}}
            return Scripted(status=error.code, body=answer)
        except (urllib.error.URLError, OSError) as error:  # down or timed out: a 502, as a proxy
            return Scripted(status=502, body={"error": {"message": f"upstream: {error}"}})

    def _too_long(self, body: dict[str, Any], prompt_tokens: int) -> Scripted | None:
        if self.n_ctx is None:
            return None
        shown: int | None
        if self.reserve_completion:
            shown = int(body.get("max_completion_tokens") or body.get("max_tokens") or 0)
            over = prompt_tokens + shown > self.n_ctx
        else:  # llama-cpp-python: max_completion_tokens is ignored, the completion is capped
            shown = body.get("max_tokens")
            over = prompt_tokens >= self.n_ctx
        if not over:
            return None
        return Scripted(status=400, body=context_length_body(self.n_ctx, prompt_tokens, shown))

    def _completion(
        self, request: dict[str, Any], message: dict[str, Any], item: Scripted, prompt: int
    ) -> dict[str, Any]:
        completion = estimate_tokens(message_text([message])) or 1
        return {
            "id": f"chatcmpl-stub-{next(self._ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.get("model") or self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": item.finish_reason}],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        }


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up mid-answer is routine here; stay quiet about it."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    stub: StubOpenAI

    def log_message(self, format: str, *args: Any) -> None:
        """No access log on stderr."""

    def _send(self, item: Scripted) -> None:
        if item.drop:
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        data = json.dumps(item.body).encode()
        self.send_response(item.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in item.headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _recorded(self) -> Recorded:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode(errors="replace")
        headers = {k.lower(): v for k, v in self.headers.items()}
        recorded = Recorded(self.command, self.path, headers, body)
        self.stub._record(recorded)
        return recorded

    def do_GET(self) -> None:
        self._recorded()
        if self.path.rstrip("/") == "/v1/models":
            model = {"id": self.stub.model, "object": "model", "owned_by": "stub"}
            self._send(Scripted(body={"object": "list", "data": [model]}))
        else:
            self._send(Scripted(status=404, body={"error": {"message": f"no {self.path}"}}))

    def do_POST(self) -> None:
        recorded = self._recorded()
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._send(Scripted(status=404, body={"error": {"message": f"no {self.path}"}}))
        elif not isinstance(recorded.body, dict):
            self._send(Scripted(status=400, body={"error": {"message": "body is not JSON"}}))
        else:
            self._send(self.stub.answer(recorded.body))
