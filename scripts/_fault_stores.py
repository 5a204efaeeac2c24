"""The fault trial's store probes: a hung Chroma server (stopped with SIGSTOP), a hung PostgreSQL (a
proxy that stops forwarding; a lock held by another session), turns recorded while the vector store
was down, erasure racing a sync and an agent (three processes on embedded Chroma), a full disk."""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from _fault_rigs import (
    TESTS,
    ChromaServer,
    Outcome,
    Ran,
    Trial,
    chroma_server,
    cli,
    connector_env,
    tenant_json,
)
from frozen_proxy import frozen_proxy  # type: ignore[import-not-found]
from pydantic import SecretStr
from stored_bytes import files_naming  # type: ignore[import-not-found]

from connector.clock import SystemClock
from connector.errors import ConnectorError
from connector.memory import Memory
from connector.settings import (
    ChromaSettings,
    ConversationSettings,
    DatabaseSettings,
    RetentionSettings,
    Settings,
    TenantSettings,
)
from connector.testing.acumatica import FakeAcumatica
from connector.testing.server import ServedFake, serve

QUESTION = "Why was I charged twice?"


def timed(call: Callable[[], Any]) -> tuple[Any, BaseException | None, float]:
    started = time.monotonic()
    try:
        return call(), None, time.monotonic() - started
    except Exception as exc:  # the probe reports what the user would see
        return None, exc, time.monotonic() - started


def one_line(exc: BaseException | None) -> str:
    return "" if exc is None else f"{type(exc).__name__}: {exc}"


def _erp(customers: int = 8, invoices: int = 40, cases: int = 40) -> tuple[FakeAcumatica, ServedFake]:
    fake = FakeAcumatica(
        seed=3,
        clock=SystemClock(),
        customers=customers,
        vendors=0,
        invoices=invoices,
        sales_orders=0,
        bills=0,
        cases=cases,
    )
    return fake, serve(fake)


def _tenant(fake: FakeAcumatica, server: ServedFake, streams: list[str]) -> TenantSettings:
    return fake.tenant_settings("erp", base_url=server.url, page_size=50, streams=streams)


def _settings(
    data_dir: Path, url: str, tenant: TenantSettings, chroma: ChromaSettings | None = None, **sections: Any
) -> Settings:
    return Settings(
        data_dir=data_dir,
        database=DatabaseSettings(url=SecretStr(url)),
        tenants=[tenant],
        chroma=chroma or ChromaSettings(),
        retention=RetentionSettings(episodic_days=3650),
        **sections,
    )


def _customer_with_invoices(fake: FakeAcumatica) -> tuple[str, str]:
    """A customer with an invoice, and the customer's name (the ERP facts a context must show)."""
    key = fake.record("Invoice", fake.keys("Invoice")[0])["Customer"]
    return key, fake.record("Customer", key)["CustomerName"]


def _cli_verdict(name: str, healthy: Ran, hung: Ran, deadline: float, *, must: str = "") -> Outcome:
    """A CLI call on a hung store: blocked = its time less the same call's time on a healthy store."""
    blocked = max(hung.command_seconds - healthy.command_seconds, 0.0)
    lines = hung.error_lines()
    said = lines[-1][:140] if lines else ""
    ok = (
        blocked <= deadline + 1
        and len(lines) <= 1
        and hung.code != -9
        and (not must or must in hung.out + hung.err)
    )
    figure = f"blocked {blocked:.1f} s vs deadline {deadline:g} s (+1), exit {hung.code}, "
    figure += f"{len(lines)} stderr line(s)"
    return Outcome(name, ok, f"{figure}: {said!r}" if said else figure, "" if ok else hung.err[-300:])


def _doctor_fails(verdict: Outcome, ran: Ran, item: str) -> None:
    """``doctor`` must report the hung store's check as FAIL."""
    failed = any(item in line.lower() and "FAIL" in line.upper() for line in ran.out.splitlines())
    verdict.ok = verdict.ok and failed
    verdict.figure += f"; {item} check {'FAIL' if failed else 'NOT failed'}"


def hung_chroma(trial: Trial) -> list[Outcome]:
    """The ``chroma run`` process stopped (SIGSTOP) under a warmed-up agent and fresh CLI commands."""
    directory = trial.directory("hung-chroma")
    url = trial.database("sqlite", directory)
    fake, erp = _erp()
    out: list[Outcome] = []
    try:
        with chroma_server(directory / "chroma-server") as chroma:
            tenant = _tenant(fake, erp, ["Customer", "Invoice", "Case"])
            env = connector_env(
                directory / "data", url, [tenant_json(tenant, fake.password)], chroma=chroma.address
            )
            if (synced := cli(env, "sync")).code != 0:
                return [Outcome("hung chroma: setup", False, f"sync exit {synced.code}", synced.err[-300:])]
            customer, name = _customer_with_invoices(fake)
            conf = ChromaSettings(host=chroma.host, port=chroma.port)
            settings = _settings(directory / "data", url, tenant, conf)
            read_s, write_s = conf.read_timeout_s, conf.timeout_s
            memory = Memory(settings, llm=None)
            memory.record_case(customer, "Charged twice for AR invoice", "Refunded the duplicate charge")
            memory.build_context(customer, QUESTION)
            others = [k for k in fake.keys("Customer") if k != customer]
            commands = {
                "connector context": ["context", customer, QUESTION],
                "connector episodic recall": ["episodic", "recall", customer, QUESTION],
                "connector episodic stats": ["episodic", "stats"],
                "connector doctor": ["doctor"],
                "connector episodic reindex --check": ["episodic", "reindex", "--check"],
                "connector forget": ["forget", others[1]],
            }
            patient = {"connector episodic reindex --check", "connector forget"}  # operator work: timeout_s
            healthy = {
                label: cli(env, *args, timeout=120)
                for label, args in commands.items()
                if label not in patient
            }
            healthy["connector episodic reindex --check"] = cli(
                env, "episodic", "reindex", "--check", timeout=120
            )
            healthy["connector forget"] = cli(
                env, "forget", others[0], timeout=120
            )  # another customer: same work
            healthy_sync = cli(env, "sync", timeout=300)  # nothing changed: the same reads, no writes
            chroma.freeze()
            try:
                _, exc, seconds = timed(lambda: memory.record_case(customer, "Asked again", "Answered again"))
                ok = isinstance(exc, ConnectorError) and seconds <= write_s + 1 and "\n" not in str(exc)
                out.append(
                    Outcome(
                        "hung chroma: record_case",
                        ok,
                        f"{seconds:.1f} s vs deadline {write_s:g} s (+1): {one_line(exc)[:140]!r}",
                    )
                )
                for label, agent in (("warm agent", memory), ("fresh agent", Memory(settings, llm=None))):
                    result, exc, seconds = timed(lambda a=agent: a.build_context(customer, QUESTION))  # type: ignore[misc]
                    shown = result is not None and name in result.text
                    warning = "; ".join(result.warnings) if result is not None else one_line(exc)
                    cases = result is not None and "Refunded the duplicate charge" in result.text
                    ok = exc is None and shown and seconds <= read_s + 1 and (bool(result.warnings) or cases)
                    out.append(
                        Outcome(
                            f"hung chroma: build_context ({label})",
                            ok,
                            f"{seconds:.1f} s vs deadline {read_s:g} s (+1), ERP facts "
                            f"{'shown' if shown else 'MISSING'}, "
                            f"past case {'shown (from memory)' if cases else 'left out'}, "
                            f"warning {warning[:120]!r}",
                        )
                    )
                for label, args in commands.items():
                    hung = cli(env, *args, timeout=120)
                    must = name if label == "connector context" else ""
                    deadline = write_s if label in patient else read_s
                    verdict = _cli_verdict(f"hung chroma: {label}", healthy[label], hung, deadline, must=must)
                    if label == "connector doctor":
                        _doctor_fails(verdict, hung, "chroma")
                    out.append(verdict)
                out.append(_sync_into_hung_chroma(env, fake, healthy_sync, write_s))
            finally:
                chroma.thaw()
                memory.close()
    finally:
        erp.stop()
    return out


def _sync_into_hung_chroma(
    env: dict[str, str], fake: FakeAcumatica, healthy: Ran, deadline: float
) -> Outcome:
    """A case closed in the ERP, then ``connector sync`` (which ingests it) with the server stopped:
    the ERP's records are stored and the ingest fails within ``chroma.timeout_s``, in one line."""
    records = (fake.record("Case", key) for key in fake.keys("Case"))
    key = next(r["CaseID"] for r in records if r["Status"] not in ("Closed", "Resolved"))
    fake.modify("Case", key, {"Status": "Closed"})
    hung = cli(env, "sync", timeout=300)
    verdict = _cli_verdict("hung chroma: connector sync (a closed case to ingest)", healthy, hung, deadline)
    url = env["CONNECTOR_DATABASE__URL"]
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            query = sa.text("SELECT is_closed FROM crm_case WHERE external_id = :k")
            closed = bool(conn.execute(query, {"k": key}).scalar())
    finally:
        engine.dispose()
    verdict.ok = verdict.ok and closed
    verdict.figure += f"; the closed case {'stored' if closed else 'NOT stored'} in the ERP facts"
    return verdict


def hung_postgres(trial: Trial) -> list[Outcome]:
    """PostgreSQL behind a proxy that stops forwarding (a stopped server), then a lock held by another
    session."""
    directory = trial.directory("hung-postgres")
    direct = trial.database("postgres", directory)
    fake, erp = _erp(cases=0)
    out: list[Outcome] = []
    try:
        with frozen_proxy(("127.0.0.1", 5432)) as proxy:
            url = (
                sa.engine.make_url(direct)
                .set(host="127.0.0.1", port=proxy.port)
                .render_as_string(hide_password=False)
            )
            tenant = _tenant(fake, erp, ["Customer", "Invoice"])
            env = connector_env(directory / "data", url, [tenant_json(tenant, fake.password)])
            if (synced := cli(env, "sync")).code != 0:
                return [Outcome("hung postgres: setup", False, f"sync exit {synced.code}", synced.err[-300:])]
            customer, name = _customer_with_invoices(fake)
            settings = _settings(directory / "data", url, tenant)
            deadline = settings.database.read_timeout_s
            memory = Memory(settings, llm=None)
            memory.build_context(customer, QUESTION)
            commands = {
                "connector context": ["context", customer, QUESTION],
                "connector sync status": ["sync", "status", "--json"],
                "connector doctor": ["doctor"],
            }
            healthy = {label: cli(env, *args, timeout=120) for label, args in commands.items()}
            proxy.freeze()
            try:
                _, exc, seconds = timed(lambda: memory.build_context(customer, QUESTION))
                ok = isinstance(exc, ConnectorError) and seconds <= deadline + 1 and "\n" not in str(exc)
                out.append(
                    Outcome(
                        "hung postgres (frozen): build_context",
                        ok,
                        f"{seconds:.1f} s vs deadline {deadline:g} s (+1): {one_line(exc)[:140]!r}",
                    )
                )
                _, exc, seconds = timed(lambda: memory.lookup_document(customer, "AR 1"))
                ok = isinstance(exc, ConnectorError) and seconds <= deadline + 1
                out.append(
                    Outcome(
                        "hung postgres (frozen): lookup_document",
                        ok,
                        f"{seconds:.1f} s vs deadline {deadline:g} s (+1): {one_line(exc)[:140]!r}",
                    )
                )
                for label, args in commands.items():
                    hung = cli(env, *args, timeout=120)
                    verdict = _cli_verdict(f"hung postgres (frozen): {label}", healthy[label], hung, deadline)
                    if label == "connector doctor":
                        _doctor_fails(verdict, hung, "database")
                    out.append(verdict)
            finally:
                proxy.thaw()
                memory.close()
        out.extend(_locked_postgres(direct, directory, tenant, fake.password, customer, name))
    finally:
        erp.stop()
    return out


def _locked_postgres(
    url: str, directory: Path, tenant: TenantSettings, password: str, customer: str, name: str
) -> list[Outcome]:
    """Another session holds an exclusive lock on the customers' table (a long migration, a stuck job)."""
    settings = _settings(directory / "data", url, tenant)
    deadline = settings.database.read_timeout_s
    env = connector_env(directory / "data", url, [tenant_json(tenant, password)])
    healthy = cli(env, "context", customer, QUESTION, timeout=120)
    holder = sa.create_engine(url, poolclass=sa.pool.NullPool)
    out: list[Outcome] = []
    with holder.connect() as conn:
        conn.execute(sa.text("LOCK TABLE party IN ACCESS EXCLUSIVE MODE"))
        memory = Memory(settings, llm=None)
        try:
            _, exc, seconds = timed(lambda: memory.build_context(customer, QUESTION))
            ok = isinstance(exc, ConnectorError) and seconds <= deadline + 1
            out.append(
                Outcome(
                    "hung postgres (lock held): build_context",
                    ok,
                    f"{seconds:.1f} s vs deadline {deadline:g} s (+1): {one_line(exc)[:140]!r}",
                )
            )
            hung = cli(env, "context", customer, QUESTION, timeout=120)
            out.append(_cli_verdict("hung postgres (lock held): connector context", healthy, hung, deadline))
        finally:
            memory.close()
            conn.rollback()
    holder.dispose()
    return out


def reindex_mends(trial: Trial) -> Outcome:
    """Turns recorded while the Chroma server is down; ``reindex`` (no --rebuild) mends them."""
    name = "turns recorded while Chroma was down, mended by reindex"
    directory = trial.directory("reindex")
    url = trial.database("sqlite", directory)
    fake, erp = _erp(cases=0)
    try:
        path = directory / "chroma-server"
        server = ChromaServer(path)
        tenant = _tenant(fake, erp, ["Customer"])
        env = connector_env(
            directory / "data",
            url,
            [tenant_json(tenant, fake.password)],
            chroma=server.address,
            CONNECTOR_CONVERSATIONS__ENABLED="true",
        )
        if (synced := cli(env, "sync")).code != 0:
            server.stop()
            return Outcome(name, False, f"sync exit {synced.code}", synced.err[-300:])
        customer = fake.keys("Customer")[0]
        conf = ChromaSettings(host=server.host, port=server.port)
        settings = _settings(
            directory / "data", url, tenant, conf, conversations=ConversationSettings(enabled=True)
        )
        memory = Memory(settings, llm=None)
        for i in range(2):
            memory.record_turn("before", customer, "user", f"Where is invoice {i}?")
        memory.conversations.flush(60)
        server.stop()
        refused = 0
        for i in range(20):
            try:
                memory.record_turn("while-down", customer, "user", f"Turn {i} about the credit note")
            except Exception:
                refused += 1
        with contextlib.suppress(Exception):
            memory.conversations.flush(15)
        memory.close()
        server = ChromaServer(path, server.port)
        try:
            before = cli(env, "episodic", "reindex", "--check")
            mended = cli(env, "episodic", "reindex")
            after = cli(env, "episodic", "reindex", "--check")
        finally:
            server.stop()
    finally:
        erp.stop()
    seen = json.loads(before.out or "{}").get("turns", {})
    fixed = json.loads(after.out or "{}").get("turns", {})
    missing = seen.get("missing", "?")
    ok = (
        after.code == 0
        and fixed.get("consistent") is True
        and fixed.get("indexed_turns") == 22 - refused
        and mended.code == 0
        and "rebuild" not in mended.out
    )
    figure = (
        f"{20 - refused} turns recorded while down ({refused} refused); "
        f"--check found {missing} without a vector (exit {before.code}); reindex: {mended.out.strip()[:80]}; "
        f"after: {fixed.get('indexed_turns')} indexed, "
        f"consistent={fixed.get('consistent')}"
    )
    return Outcome(name, ok, figure, "" if ok else (after.out + after.err)[-300:])


def erasure_race(trial: Trial, store: str) -> list[Outcome]:
    """``connector sync`` (ingesting closed cases), an agent and ``connector forget`` as three processes
    on one embedded Chroma; then a quiet third ``forget`` and a scan of every file for the customer."""
    directory = trial.directory(f"erasure-{store}")
    url = trial.database(store, directory)
    fake = FakeAcumatica(
        seed=3, clock=SystemClock(), customers=2, vendors=0, invoices=12, sales_orders=0, bills=0, cases=60
    )
    server = serve(fake)
    kept, erased = fake.keys("Customer")[:2]
    data = directory / "data"
    try:
        tenant = fake.tenant_settings("erp", base_url=server.url, page_size=10, streams=["Customer", "Case"])
        env = connector_env(
            data,
            url,
            [tenant_json(tenant, fake.password)],
            CONNECTOR_CONVERSATIONS__ENABLED="true",
            CONNECTOR_EPISODIC__ALLOW_UNKNOWN_CUSTOMERS="true",
        )
        if store == "sqlite":
            cli(env, "db", "upgrade")
        agent = subprocess.Popen(
            [_python(), str(TESTS / "vector_workers.py"), "agent", str(data), url, "30", "erp", kept, erased],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        forgets: list[Ran] = []
        racing = threading.Thread(target=_forget_when_written, args=(env, url, erased, forgets))
        racing.start()
        sync = cli(env, "sync")
        agent_out, agent_err = agent.communicate(timeout=600)
        racing.join(timeout=600)
        quiet = cli(env, "forget", erased)
    finally:
        server.stop()
    found = _files_keeping(data, erased)
    size = sum((data / f).stat().st_size for f in found)
    control = bool(_files_keeping(data, kept))  # the scan sees what the kept customer said
    totals = [json.loads(r.out or "{}").get("total") for r in forgets]
    codes = {
        "sync": sync.code,
        "agent": agent.returncode,
        "forgets": [r.code for r in forgets],
        "quiet forget": quiet.code,
    }
    reopened = cli(env, "episodic", "reindex", "--check")
    rows = _rows_of(url, erased)
    erasure_ok = control and not found and rows == 0 and bool(totals) and (totals[0] or 0) > 0
    processes_ok = (
        sync.code == 0 and agent.returncode == 0 and all(r.code == 0 for r in forgets) and quiet.code == 0
    )
    processes_ok = processes_ok and reopened.code in (0, 1) and "StoreBusy" not in reopened.err
    agent_done = json.loads(agent_out.strip().splitlines()[-1]) if agent_out.strip() else {}
    return [
        Outcome(
            f"forget racing a sync and an agent [{store} + embedded chroma]",
            erasure_ok,
            f"{len(found)} file(s) / {size} bytes naming the erased customer ({sorted(found)[:3]}; "
            f"the kept customer's turns {'seen' if control else 'NOT seen: the scan is blind'}), "
            f"{rows} rows left, forget totals {totals} then quiet "
            f"{json.loads(quiet.out or '{}').get('total')}",
        ),
        Outcome(
            f"three processes on embedded chroma [{store}]",
            processes_ok,
            f"exit codes {codes}; agent {agent_done.get('done', {})}; store reopens (reindex --check exit "
            f"{reopened.code})",
            (agent_err + sync.err + reopened.err)[-300:],
        ),
    ]


def _files_keeping(data: Path, customer: str) -> dict[str, list[bytes]]:
    """Files under ``data`` that still hold the erased customer: its id anywhere but in the relational
    store (whose ERP facts keep it by design: the ERP owns them), the agent's turns everywhere."""
    said = f"{customer} asks about".encode()  # tests/vector_workers.py's turns
    stores = {p for p in data.rglob("connector.sqlite3*")}
    found = {
        name: hits
        for name, hits in files_naming(data, [customer.encode(), said]).items()
        if data / name not in stores
    }
    found |= {str(p.relative_to(data)): [said] for p in stores if p.is_file() and said in p.read_bytes()}
    return found


def _python() -> str:
    import sys

    return sys.executable


def _forget_when_written(env: dict[str, str], url: str, customer: str, forgets: list[Ran]) -> None:
    """Once the writers gave the customer cases and turns: ``connector forget`` twice, racing them."""
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    deadline = time.monotonic() + 300
    cases = sa.text("SELECT count(*) FROM episodic_entry WHERE customer_id = :c")
    turns = sa.text(
        "SELECT count(*) FROM work_turn t JOIN work_session s ON s.session_id = t.session_id"
        " WHERE s.customer_id = :c"
    )
    while time.monotonic() < deadline:
        try:
            with engine.connect() as conn:
                if (
                    conn.execute(cases, {"c": customer}).scalar_one() >= 3
                    and conn.execute(turns, {"c": customer}).scalar_one() >= 3
                ):
                    break
        except sa.exc.DBAPIError:
            pass  # tables not there yet
        time.sleep(0.1)
    engine.dispose()
    for _ in range(2):
        forgets.append(cli(env, "forget", customer))
        time.sleep(0.5)


def _rows_of(url: str, customer: str) -> int:
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    queries = [
        "SELECT count(*) FROM episodic_entry WHERE customer_id = :c",
        "SELECT count(*) FROM work_session WHERE customer_id = :c",
        "SELECT count(*) FROM learned_fact WHERE customer_id = :c",
    ]
    try:
        with engine.connect() as conn:
            return sum(int(conn.execute(sa.text(q), {"c": customer}).scalar_one()) for q in queries)
    finally:
        engine.dispose()


def disk_full(trial: Trial) -> list[Outcome]:
    """The data directory on a small tmpfs filled to the brim: the sync and record_turn name the full disk."""
    directory = trial.directory("disk-full")
    mount = directory / "small-disk"
    mount.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], capture_output=True
    )
    if mounted.returncode != 0:
        why = mounted.stderr.decode(errors="replace").strip()[:120]
        return [
            Outcome(
                "full disk (tmpfs)",
                True,
                f"NOT RUN: cannot mount a tmpfs ({why}); "
                "tests/db/test_store_diagnosis.py fills SQLite with max_page_count instead",
            )
        ]
    fake, erp = _erp(customers=4000, invoices=0, cases=0)
    try:
        data = mount / "data"
        url = trial.database("sqlite", mount)
        tenant = _tenant(fake, erp, ["Customer"])
        env = connector_env(data, url, [tenant_json(tenant, fake.password)])
        cli(env, "db", "upgrade")
        _fill(mount, leave=96 * 1024)
        sync = cli(env, "sync")
        lines = sync.error_lines()
        named = sum("disk is full" in line for line in lines)
        ok = (
            sync.code not in (0, -9)
            and named >= 1
            and all("disk is full" in x for x in lines if "Error" in x)
        )
        out = [
            Outcome(
                "full disk (tmpfs 4 MB): connector sync",
                ok,
                f"exit {sync.code}, {len(lines)} stderr line(s), {named} naming the full disk: "
                f"{(lines[-1] if lines else '')[:140]!r}",
                sync.err[-300:],
            )
        ]
        settings = _settings(data, url, tenant)
        memory = Memory(settings, llm=None)
        try:
            _fill(mount, leave=0)
            _, exc, seconds = timed(
                lambda: [
                    memory.record_turn("full", fake.keys("Customer")[0], "user", "x" * 4000)
                    for _ in range(200)
                ]
            )
        finally:
            memory.close()
        ok = exc is not None and "disk is full" in str(exc) and seconds < 5
        out.append(
            Outcome("full disk (tmpfs 4 MB): record_turn", ok, f"{seconds:.1f} s: {one_line(exc)[:140]!r}")
        )
        return out
    finally:
        erp.stop()
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def _fill(mount: Path, leave: int) -> None:
    """Take the free space of ``mount`` but ``leave`` bytes."""
    free = shutil.disk_usage(mount).free
    index = len(list(mount.glob("filler-*")))
    with (mount / f"filler-{index}").open("wb") as filler, contextlib.suppress(OSError):
        filler.write(b"\0" * max(free - leave, 0))
