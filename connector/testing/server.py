"""Serve a fake ERP on loopback over real HTTP: ``serve(fake) -> ServedFake`` with ``.url``.

Any object with ``handle(httpx.Request) -> httpx.Response`` can be served (the fake Acumatica,
the fake SAP). A threaded HTTP/1.1 server turns each request into an ``httpx.Request``, calls
``handle`` and writes the answer back in one write, keeping the connection alive. A fake that
raises ``httpx.TimeoutException`` (an injected timeout) makes the server drop the connection
without an answer, which the client sees as a transport failure.
"""

from __future__ import annotations

import logging
import socket
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Protocol

import httpx

log = logging.getLogger(__name__)

_HOP_BY_HOP = frozenset(
    {"connection", "content-length", "transfer-encoding", "keep-alive", "content-encoding"}
)


class FakeERP(Protocol):
    def handle(self, request: httpx.Request) -> httpx.Response: ...


def _read_chunked(handler: BaseHTTPRequestHandler) -> bytes:
    chunks: list[bytes] = []
    while True:
        size = int(handler.rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
        if size == 0:
            while handler.rfile.readline() not in (b"\r\n", b"\n", b""):
                pass
            return b"".join(chunks)
        chunks.append(handler.rfile.read(size))
        handler.rfile.readline()


def _handler_for(fake: FakeERP, origin: list[str]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "FakeERP/1.0"

        def setup(self) -> None:
            super().setup()
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def log_message(self, format: str, *args: object) -> None:
            log.debug("%s " + format, self.address_string(), *args)

        def _dispatch(self) -> None:
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                body = _read_chunked(self)
            else:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
            request = httpx.Request(
                self.command, origin[0] + self.path, headers=list(self.headers.items()), content=body
            )
            try:
                response = fake.handle(request)
                content = response.read()
            except httpx.TimeoutException:
                self.close_connection = True
                return
            except Exception:
                log.exception("the fake ERP failed on %s %s", self.command, self.path)
                response = httpx.Response(500, text="the fake ERP raised an exception; see its log")
                content = response.read()
            self._write(response, content)

        def _write(self, response: httpx.Response, content: bytes) -> None:
            status = response.status_code
            try:
                reason = HTTPStatus(status).phrase
            except ValueError:
                reason = "Unknown"
            lines = [f"HTTP/1.1 {status} {reason}"]
            lines += [f"{k}: {v}" for k, v in response.headers.multi_items() if k.lower() not in _HOP_BY_HOP]
            if status not in (204, 304) and not 100 <= status < 200:
                lines.append(f"Content-Length: {len(content)}")
            else:
                content = b""
            if self.close_connection:
                lines.append("Connection: close")
            head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
            self.wfile.write(head + content)
            self.log_request(status, len(content))

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _dispatch

    return Handler


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class ServedFake:
    """A fake ERP being served; ``url`` is its base URL. Stop with :meth:`stop` or ``with``."""

    def __init__(self, fake: FakeERP, host: str, port: int) -> None:
        self.fake = fake
        origin: list[str] = [""]
        self._server = _Server((host, port), _handler_for(fake, origin))
        address = self._server.server_address
        bound = address[0]
        self.host: str = bound.decode() if isinstance(bound, bytes) else str(bound)
        self.port: int = int(address[1])
        display_host = f"[{self.host}]" if ":" in self.host else self.host
        self.url = f"http://{display_host}:{self.port}"
        origin[0] = self.url
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.2},
            name=f"fake-erp-{self.port}",
            daemon=True,
        )
        self._thread.start()
        self._stopped = False

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> ServedFake:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def serve(fake: FakeERP, host: str = "127.0.0.1", port: int = 0) -> ServedFake:
    """Start serving ``fake`` on ``host:port`` (port 0: any free port) in background threads."""
    return ServedFake(fake, host, port)
