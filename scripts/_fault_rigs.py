"""The real parts the fault trial (scripts/fault_trial.py) runs its probes on: a scratch work
directory, SQLite files and scratch PostgreSQL databases, a ``chroma run`` server it can stop and
continue, fake ERPs served over loopback HTTP, ``connector`` commands as child processes, a raw
MCP stdio client and an OTLP receiver. The test rigs under tests/ (frozen proxy, free ports, byte
scans, hooked fakes) are reused from there."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent import futures
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
for _path in (str(ROOT), str(TESTS)):
    if _path not in sys.path:
        sys.path.insert(0, _path)

from ports import free_port  # type: ignore[import-not-found]  # noqa: E402

from connector.settings import TenantSettings  # noqa: E402
from connector.testing.scratch_db import DEFAULT_PG_ADMIN, ScratchDatabases  # noqa: E402


@dataclass
class Outcome:
    """One probe's verdict: PASS/FAIL, the measured figure, and the cause when it failed."""

    probe: str
    ok: bool
    figure: str
    detail: str = ""

    def line(self) -> str:
        tail = f" -- {self.detail}" if self.detail and not self.ok else ""
        return f"{'PASS' if self.ok else 'FAIL'}  {self.probe}: {self.figure}{tail}".replace("\n", " ")


class AheadClock:
    """The ERP's clock: the wall clock plus ``offset`` (an ERP server whose clock runs fast)."""

    def __init__(self, offset: timedelta = timedelta(0)) -> None:
        self.offset = offset

    def now(self) -> datetime:
        return datetime.now(UTC) + self.offset

    def sleep(self, seconds: float) -> None:
        time.sleep(max(seconds, 0))


@dataclass
class Ran:
    """One finished ``connector`` process: exit code, output and wall time."""

    args: list[str]
    code: int
    out: str
    err: str
    seconds: float
    #: the command's own time, from ``main()`` called to its return (the interpreter's start and the
    #: imports left out: on a loaded machine they vary by seconds); the wall time if it never returned
    command_seconds: float = 0.0

    def error_lines(self) -> list[str]:
        """The warning and error lines a user reads on stderr (JSON, INFO and DEBUG log lines left out)."""
        return [
            line
            for line in self.err.splitlines()
            if line.strip()
            and not line.lstrip().startswith("{")
            and not any(f" {lv} " in line for lv in ("INFO", "DEBUG"))
        ]


@dataclass
class Trial:
    """The trial's scratch space: directories, databases and the environment of its processes."""

    root: Path
    pg_admin: str | None
    scratch: ScratchDatabases | None = None
    _counter: int = 0

    def directory(self, name: str) -> Path:
        self._counter += 1
        path = self.root / f"{self._counter:02d}-{name}"
        path.mkdir(parents=True)
        return path

    def database(self, kind: str, directory: Path, *, migrated: bool = True) -> str:
        """A new empty store: an SQLite file in ``directory`` or a scratch PostgreSQL database."""
        if kind == "sqlite":
            return f"sqlite:///{directory / 'data' / 'connector.sqlite3'}"
        if self.pg_admin is None:
            raise RuntimeError("PostgreSQL is off (--skip-postgres)")
        if self.scratch is None:
            self.scratch = ScratchDatabases(self.pg_admin, "fault_trial")
        url = self.scratch.create()
        if migrated:  # as the deployment guide says: `connector db upgrade` before the first run
            upgraded = cli(connector_env(directory / "data", url), "db", "upgrade")
            if upgraded.code != 0:
                raise RuntimeError(f"connector db upgrade failed: {upgraded.err[-300:]}")
        return url

    def close(self) -> None:
        if self.scratch is not None:
            self.scratch.drop_all()


def tenant_json(tenant: TenantSettings, password: str) -> dict[str, Any]:
    data = tenant.model_dump(mode="json")
    data["password"] = password
    return data


def connector_env(
    data_dir: Path,
    db_url: str,
    tenants: list[dict[str, Any]] | None = None,
    *,
    chroma: tuple[str, int] | None = None,
    **extra: str,
) -> dict[str, str]:
    """The environment of a ``connector`` process, as a user configures one (CONNECTOR_* variables)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CONNECTOR_", "OTEL_"))}
    env |= {
        "CONNECTOR_DATABASE__URL": db_url,
        "CONNECTOR_DATA_DIR": str(data_dir),
        "CONNECTOR_TENANTS": json.dumps(tenants or []),
        "CONNECTOR_RETENTION__EPISODIC_DAYS": "3650",  # the fakes' cases are older than the default
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(TESTS)]),
    }
    if chroma is not None:
        env |= {"CONNECTOR_CHROMA__HOST": chroma[0], "CONNECTOR_CHROMA__PORT": str(chroma[1])}
    return env | extra


#: ``connector ARGS`` as its console script runs it, timing ``main()`` into the file ``$FAULT_TRIAL_TIMING``.
_TIMED_MAIN = """
import sys, time
from connector.cli import main
started = time.monotonic()
try:
    code = main(sys.argv[1:])
finally:
    with open(sys.argv[0], "w") as timing:
        timing.write(str(time.monotonic() - started))
sys.exit(code)
"""


def cli(env: dict[str, str], *args: str, timeout: float = 300, cwd: Path | None = None) -> Ran:
    """Run ``connector ARGS`` as a user would (a child process); a hang past ``timeout`` is code -9."""
    with tempfile.NamedTemporaryFile(prefix="fault-trial-timing-", delete=False) as handle:
        timing = Path(handle.name)
    command = [sys.executable, "-c", _TIMED_MAIN.replace("sys.argv[0]", repr(str(timing))), *args]
    started = time.monotonic()
    process = subprocess.Popen(
        command,
        env=env,
        cwd=cwd or ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        out, err = process.communicate()
        wall = time.monotonic() - started
        timing.unlink(missing_ok=True)
        return Ran(list(args), -9, out, err + f"\n(killed after {timeout:.0f} s)", wall, wall)
    wall = time.monotonic() - started
    text = timing.read_text().strip() if timing.exists() else ""
    timing.unlink(missing_ok=True)
    return Ran(list(args), process.returncode, out, err, wall, float(text) if text else wall)


# Chroma server ------------------------------------------------------------------------------------


def _chroma_executable() -> str:
    beside = Path(sys.executable).parent / "chroma"
    if beside.exists():
        return str(beside)
    raise RuntimeError("the `chroma` command (chromadb) is not installed beside this Python")


class ChromaServer:
    """``chroma run`` on a free loopback port; :meth:`freeze` stops it (SIGSTOP), :meth:`thaw` continues."""

    def __init__(self, path: Path, port: int | None = None) -> None:
        self.path, self.host, self.port = path, "127.0.0.1", port or free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.start()

    def start(self) -> None:
        log = (self.path.parent / f"chroma-{self.port}.log").open("ab")
        self.process = subprocess.Popen(
            [
                _chroma_executable(),
                "run",
                "--path",
                str(self.path),
                "--host",
                self.host,
                "--port",
                str(self.port),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 60
        while not self.alive():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"chroma run did not start on port {self.port}")
            time.sleep(0.2)

    def alive(self) -> bool:
        try:
            url = f"http://{self.host}:{self.port}/api/v2/heartbeat"
            return httpx.get(url, timeout=1.0).status_code == 200
        except httpx.HTTPError:
            return False

    def _signal(self, signum: int) -> None:
        assert self.process is not None
        os.killpg(self.process.pid, signum)

    def freeze(self) -> None:
        self._signal(signal.SIGSTOP)

    def thaw(self) -> None:
        self._signal(signal.SIGCONT)

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.thaw()
        self._signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self._signal(signal.SIGKILL)
            self.process.wait(timeout=15)

    @property
    def address(self) -> tuple[str, int]:
        return self.host, self.port


@contextmanager
def chroma_server(path: Path) -> Iterator[ChromaServer]:
    server = ChromaServer(path)
    try:
        yield server
    finally:
        server.stop()


# MCP over stdio, spoken line by line --------------------------------------------------------------


class RawStdio:
    """``connector mcp`` over stdio, as a client in any language speaks to it: one JSON line each way."""

    def __init__(self, env: dict[str, str], cwd: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "connector.cli", "mcp"],
            env=env,
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._next_id = 0

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.append(line)

    def send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def reply(self, timeout: float = 60) -> dict[str, Any] | None:
        """The next reply (a message with an id, null included), or None after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            while self._lines:
                message: dict[str, Any] = json.loads(self._lines.pop(0))
                if "id" in message:
                    return message
            time.sleep(0.01)
        return None

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any] | None:
        self._next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self._next_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(json.dumps(message))
        return self.reply()

    def initialize(self) -> None:
        client = {"name": "fault-trial", "version": "1"}
        self.call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": client})
        self.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))

    def tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """A tool's result: ``{"error": text}`` when refused, else the structured result."""
        reply = self.call("tools/call", {"name": name, "arguments": arguments}) or {}
        if "error" in reply:
            return {"error": reply["error"].get("message", "")}
        result = reply.get("result", {})
        text = " ".join(part.get("text", "") for part in result.get("content", []))
        if result.get("isError"):
            return {"error": text}
        return result.get("structuredContent") or {"text": text}

    def close(self) -> str:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
        assert self.process.stderr is not None
        return self.process.stderr.read()


# OTLP receiver ------------------------------------------------------------------------------------


@dataclass
class Received:
    spans: list[str] = field(default_factory=list)
    metrics: list[str] = field(default_factory=list)


@contextmanager
def otlp_receiver() -> Iterator[tuple[Received, dict[str, str]]]:
    """An OTLP/gRPC receiver on loopback (what a collector sees) and the environment pointing at it."""
    import grpc  # type: ignore[import-untyped]
    from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2, metrics_service_pb2_grpc
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

    received = Received()

    class Traces(trace_service_pb2_grpc.TraceServiceServicer):
        def Export(self, request: Any, context: Any) -> Any:
            received.spans.extend(
                s.name for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans
            )
            return trace_service_pb2.ExportTraceServiceResponse()

    class Metrics(metrics_service_pb2_grpc.MetricsServiceServicer):
        def Export(self, request: Any, context: Any) -> Any:
            received.metrics.extend(
                m.name for rm in request.resource_metrics for sm in rm.scope_metrics for m in sm.metrics
            )
            return metrics_service_pb2.ExportMetricsServiceResponse()

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Traces(), server)  # type: ignore[no-untyped-call]
    metrics_service_pb2_grpc.add_MetricsServiceServicer_to_server(Metrics(), server)  # type: ignore[no-untyped-call]
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    env = {
        "CONNECTOR_OTEL__OTLP": "true",
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}",
        "OTEL_EXPORTER_OTLP_INSECURE": "true",
    }
    try:
        yield received, env
    finally:
        server.stop(grace=None)


def new_trial(pg_admin: str | None) -> Trial:
    return Trial(Path(tempfile.mkdtemp(prefix="fault-trial-")), pg_admin)


__all__ = [
    "DEFAULT_PG_ADMIN",
    "AheadClock",
    "ChromaServer",
    "Outcome",
    "Ran",
    "RawStdio",
    "Trial",
    "cli",
    "connector_env",
]
