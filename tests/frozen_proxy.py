"""A TCP proxy that can freeze: what a stopped server process looks like from the client.

While frozen it stops reading and forwarding (in both directions) and leaves every connection
open, so the kernel still accepts and acknowledges what the client sends: no reset, no keepalive
failure, no TCP user timeout, only silence, as with a server process stopped by SIGSTOP. Thawed, it
forwards again (what was sent meanwhile included).
"""

from __future__ import annotations

import selectors
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress


class FrozenProxy:
    """Forwards 127.0.0.1:``port`` to ``target``; :meth:`freeze` / :meth:`thaw` toggle silence."""

    def __init__(self, target: tuple[str, int]) -> None:
        self._target = target
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self._frozen = threading.Event()
        self._stop = threading.Event()
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        self._guard = threading.Lock()
        self._thread = threading.Thread(target=self._serve, name="frozen-proxy", daemon=True)
        self._thread.start()

    def freeze(self) -> None:
        self._frozen.set()

    def thaw(self) -> None:
        self._frozen.clear()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._listener.close()
        with self._guard:
            for client, server in self._pairs:
                client.close()
                server.close()
            self._pairs.clear()

    def _serve(self) -> None:
        with selectors.DefaultSelector() as sel:
            self._listener.setblocking(False)
            sel.register(self._listener, selectors.EVENT_READ)
            while not self._stop.is_set():
                if self._frozen.is_set():
                    self._stop.wait(0.02)  # nothing read, nothing accepted: the kernel queues it
                    continue
                for key, _ in sel.select(timeout=0.02):
                    if key.fileobj is self._listener:
                        self._accept(sel)
                    else:
                        self._forward(sel, key.fileobj, key.data)  # type: ignore[arg-type]

    def _accept(self, sel: selectors.BaseSelector) -> None:
        try:
            client, _ = self._listener.accept()
        except BlockingIOError:
            return
        server = socket.create_connection(self._target)
        with self._guard:
            self._pairs.append((client, server))
        sel.register(client, selectors.EVENT_READ, server)
        sel.register(server, selectors.EVENT_READ, client)

    def _forward(self, sel: selectors.BaseSelector, source: socket.socket, sink: socket.socket) -> None:
        try:
            data = source.recv(65536)
            if data:
                sink.sendall(data)
                return
        except OSError:
            pass
        for sock in (source, sink):  # one side closed: close the pair
            with suppress(KeyError, ValueError):
                sel.unregister(sock)
            sock.close()


@contextmanager
def frozen_proxy(target: tuple[str, int]) -> Iterator[FrozenProxy]:
    proxy = FrozenProxy(target)
    try:
        yield proxy
    finally:
        proxy.close()
