"""How a run reports progress: rich progress bars on a terminal, JSON lines otherwise.

The runner calls a :class:`Reporter`; which one is chosen by :func:`reporter_for` from the
``log_format`` setting and whether stderr is a terminal. JSON lines carry an ``event`` name and
the run's counters so a log pipeline can alert on them; they never carry credentials.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import datetime
from types import TracebackType
from typing import IO, Any, Literal, Protocol

from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn

from connector.sync.result import StreamResult


class Reporter(Protocol):
    def __enter__(self) -> Reporter: ...

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...

    def stream_started(self, tenant: str, stream: str, since: datetime | None, until: datetime) -> None: ...

    def page_done(self, tenant: str, stream: str, page: int, records: int, total_records: int) -> None: ...

    def stream_finished(self, result: StreamResult) -> None: ...

    def message(self, level: str, text: str, **fields: Any) -> None: ...


class NullReporter:
    """Reports nothing (library use and tests)."""

    def __enter__(self) -> NullReporter:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def stream_started(self, tenant: str, stream: str, since: datetime | None, until: datetime) -> None:
        pass

    def page_done(self, tenant: str, stream: str, page: int, records: int, total_records: int) -> None:
        pass

    def stream_finished(self, result: StreamResult) -> None:
        pass

    def message(self, level: str, text: str, **fields: Any) -> None:
        pass


def _jsonable(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


class JsonReporter(NullReporter):
    """One JSON object per line: ``stream_started``, ``page``, ``stream_finished`` and messages."""

    def __init__(self, stream: IO[str] | None = None, *, pages: bool = True) -> None:
        self._out = stream if stream is not None else sys.stderr
        self._pages = pages

    def __enter__(self) -> JsonReporter:
        return self

    def _emit(self, event: str, **fields: Any) -> None:
        line = {"event": event} | {k: _jsonable(v) for k, v in fields.items()}
        self._out.write(json.dumps(line, sort_keys=True) + "\n")
        self._out.flush()

    def stream_started(self, tenant: str, stream: str, since: datetime | None, until: datetime) -> None:
        self._emit("stream_started", tenant=tenant, stream=stream, window_start=since, window_end=until)

    def page_done(self, tenant: str, stream: str, page: int, records: int, total_records: int) -> None:
        if self._pages:
            self._emit("page", tenant=tenant, stream=stream, page=page, records=records, total=total_records)

    def stream_finished(self, result: StreamResult) -> None:
        self._emit("stream_finished", **result.as_dict())

    def message(self, level: str, text: str, **fields: Any) -> None:
        self._emit("message", level=level, message=text, **fields)


class ConsoleLogHandler(logging.Handler):
    """Writes log lines through the progress bars' console, so they print above the live bars.

    It takes the level, filters and formatter (the redaction, see :mod:`connector.redact`) of the
    terminal handler it stands in for, so a line says the same as it would without bars.
    """

    def __init__(self, console: Console, replaced: logging.Handler) -> None:
        super().__init__(replaced.level)
        self.console = console
        self.replaced = replaced
        self.filters = list(replaced.filters)
        if replaced.formatter is not None:
            self.setFormatter(replaced.formatter)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = self.format(record)
            self.console.print(text, markup=False, highlight=False, emoji=False, soft_wrap=True)
        except Exception:
            self.handleError(record)


def _terminal_streams(console: Console) -> set[int]:
    streams = (sys.stderr, sys.stdout, sys.__stderr__, sys.__stdout__, console.file)
    return {id(stream) for stream in streams if stream is not None}


class RichReporter(NullReporter):
    """A spinner row per stream with pages and records read so far (the ERP sends no totals).

    While the bars are live, the root logger's terminal handlers are routed through the bars'
    console (:class:`ConsoleLogHandler`): a log line, httpx's included, prints above the bars
    instead of into them. Handlers that write elsewhere (a file) are left alone.
    """

    def __init__(self, console: Console | None = None) -> None:
        self._console = console or Console(stderr=True)
        self._progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            TextColumn("{task.fields[pages]} pages"),
            TextColumn("{task.completed:,.0f} records"),
            TextColumn("{task.fields[status]}"),
            TimeElapsedColumn(),
            console=self._console,
        )
        self._tasks: dict[tuple[str, str], TaskID] = {}
        self._routed: list[ConsoleLogHandler] = []

    def __enter__(self) -> RichReporter:
        self._route_logging()
        self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self._progress.stop()
        finally:
            self._restore_logging()

    def _route_logging(self) -> None:
        root = logging.getLogger()
        terminal = _terminal_streams(self._console)
        for index, handler in enumerate(root.handlers):
            stream = getattr(handler, "stream", None)
            if (
                isinstance(handler, logging.StreamHandler)
                and not isinstance(handler, logging.FileHandler)
                and id(stream) in terminal
            ):
                routed = ConsoleLogHandler(self._progress.console, handler)
                root.handlers[index] = routed
                self._routed.append(routed)

    def _restore_logging(self) -> None:
        root = logging.getLogger()
        for routed in self._routed:
            if routed in root.handlers:
                root.handlers[root.handlers.index(routed)] = routed.replaced
        self._routed.clear()

    def stream_started(self, tenant: str, stream: str, since: datetime | None, until: datetime) -> None:
        label = f"{tenant}/{stream}" + (" (full)" if since is None else "")
        self._tasks[(tenant, stream)] = self._progress.add_task(label, total=None, pages=0, status="")

    def page_done(self, tenant: str, stream: str, page: int, records: int, total_records: int) -> None:
        task = self._tasks.get((tenant, stream))
        if task is not None:
            self._progress.update(task, completed=total_records, pages=page)

    def stream_finished(self, result: StreamResult) -> None:
        task = self._tasks.get((result.tenant, result.stream))
        if task is None:
            return
        status = (
            f"{result.status}: +{result.inserted} ~{result.updated} ={result.unchanged} -{result.deleted}"
        )
        self._progress.update(task, total=result.records_read, completed=result.records_read, status=status)

    def message(self, level: str, text: str, **fields: Any) -> None:
        self._progress.console.print(f"[{level}] {text}")


def reporter_for(log_format: Literal["auto", "json", "text"], *, interactive: bool | None = None) -> Reporter:
    """Rich bars when ``auto`` and stderr is a terminal (or ``text``), JSON lines otherwise."""
    if interactive is None:
        interactive = sys.stderr.isatty()
    if log_format == "text" or (log_format == "auto" and interactive):
        return RichReporter()
    return JsonReporter()
