"""Secrets never print: URL credentials in doctor, errors and logs; HTTP request lines and LLM
prompts stay out of the default logs."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import httpx
import pytest
import respx
from llm_stub import USAGE, completion
from pydantic import SecretStr

from connector.cli import main
from connector.commands import forget as forget_command
from connector.errors import ERPTransportError, StoreError
from connector.llm import LLMClient
from connector.mcp_server.guard import agent_message
from connector.redact import install_log_redaction, redact
from connector.settings import LLMSettings
from connector.sync.runner import one_line

SECRETS = ("pa55w0rd", "K3Y-value", "S1G-value", "tok-0123456789", "ghp_abcdef123456")


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("https://alice:pa55w0rd@erp.example.com/entity", "https://alice:***@erp.example.com/entity"),
        (
            "postgresql+psycopg://app:pa55w0rd@10.0.0.5:5432/db",
            "postgresql+psycopg://app:***@10.0.0.5:5432/db",
        ),
        ("https://ghp_abcdef123456@git.example.com/x", "https://***@git.example.com/x"),
        ("GET https://h/api?$top=10&api-key=K3Y-value&x=1", "GET https://h/api?$top=10&api-key=***&x=1"),
        (
            "https://blob.example.net/c/f?sv=2024&sig=S1G-value",
            "https://blob.example.net/c/f?sv=2024&sig=***",
        ),
        (
            "https://h/cb?code=tok-0123456789#access_token=tok-0123456789",
            "https://h/cb?code=***#access_token=***",
        ),
        ("Authorization: Bearer tok-0123456789", "Authorization: Bearer ***"),
        ("login failed: password=pa55w0rd user=bob", "login failed: password=*** user=bob"),
    ],
)
def test_redact_masks_credentials_and_keeps_the_endpoint(text: str, kept: str) -> None:
    assert redact(text) == kept


def test_redact_leaves_ordinary_text_alone() -> None:
    text = "token_budget must be an integer of at least 100; Basic auth failed for SO-0042 at 10:00"
    assert redact(text) == text


@pytest.fixture
def root_log() -> Iterator[io.StringIO]:
    """Root logging as the CLI sets it up, into a buffer; restored afterwards."""
    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    levels = {name: logging.getLogger(name).level for name in ("httpx", "httpcore", "openai")}
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root.handlers[:] = [handler]
    yield stream
    root.handlers[:], root.level = saved
    for name, level in levels.items():
        logging.getLogger(name).setLevel(level)


def fetch(url: str) -> None:
    with httpx.Client(transport=httpx.MockTransport(lambda r: httpx.Response(200))) as client:
        client.get(url)


def test_http_request_lines_are_not_logged_at_info(root_log: io.StringIO) -> None:
    logging.getLogger().setLevel(logging.INFO)
    install_log_redaction()
    fetch("https://erp.example.com/entity/Customer?api-key=K3Y-value")
    assert "erp.example.com" not in root_log.getvalue()


def test_http_request_lines_with_verbose_pass_the_redaction(root_log: io.StringIO) -> None:
    logging.getLogger().setLevel(logging.DEBUG)
    install_log_redaction(verbose=True)
    fetch("https://alice:pa55w0rd@erp.example.com/entity/Customer?api-key=K3Y-value&sig=S1G-value")
    logging.getLogger("connector.test").error("failed at https://alice:pa55w0rd@erp.example.com/")
    out = root_log.getvalue()
    assert "HTTP Request: GET https://" in out and "erp.example.com/entity/Customer" in out
    assert not [s for s in SECRETS if s in out], out


def test_a_logged_traceback_is_redacted(root_log: io.StringIO) -> None:
    install_log_redaction()
    try:
        raise RuntimeError("cannot reach https://alice:pa55w0rd@erp.example.com/")
    except RuntimeError:
        logging.getLogger("connector.test").exception("sync failed")
    out = root_log.getvalue()
    assert "RuntimeError" in out and "pa55w0rd" not in out


PROMPT = "Customer ABARTENDE says: my card 4111-1111 was charged twice"


@respx.mock
@pytest.mark.parametrize("opted_in", [False, True])
def test_llm_prompts_are_logged_only_with_verbose_and_the_explicit_setting(
    root_log: io.StringIO, opted_in: bool
) -> None:
    respx.post("http://llm.test/v1/chat/completions").mock(return_value=completion("ok", usage=USAGE))
    logging.getLogger().setLevel(logging.DEBUG)
    install_log_redaction(verbose=True, log_customer_text=opted_in)
    llm = LLMClient(
        LLMSettings(base_url="http://llm.test/v1", api_key=SecretStr("sk-live-secret"), model="m")
    )
    assert llm.complete("Summarise.", PROMPT).text == "ok"
    out = root_log.getvalue()
    assert (PROMPT in out) is opted_in
    assert "sk-live-secret" not in out


def test_doctor_redacts_credentials_in_urls(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    tenant = {"name": "acme", "kind": "acumatica", "base_url": "http://alice:pa55w0rd@127.0.0.1:9"}
    monkeypatch.setenv("CONNECTOR_TENANTS", json.dumps([tenant]))
    monkeypatch.setenv("CONNECTOR_LLM__BASE_URL", "http://127.0.0.1:9/v1?api-key=K3Y-value")
    for args in (["doctor"], ["doctor", "--json"]):
        main(args)
        out = capsys.readouterr()
        assert "127.0.0.1" in out.out
        assert not [s for s in SECRETS if s in out.out + out.err], out


def test_cli_and_mcp_errors_are_redacted(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    error = StoreError("Chroma at https://alice:pa55w0rd@chroma.internal:8000/?token=tok-0123456789 failed")

    def failing(_: object) -> int:
        raise error

    monkeypatch.setattr(forget_command, "_forget", failing)
    assert main(["forget", "C1"]) == 5  # a store failed: exit 5
    err = capsys.readouterr().err
    assert "chroma.internal:8000" in err and not [s for s in SECRETS if s in err]
    message = agent_message(error)
    assert "chroma.internal:8000" in message and not [s for s in SECRETS if s in message]


def test_a_sync_failure_is_stored_and_shown_redacted() -> None:
    failure = ERPTransportError("GET https://alice:pa55w0rd@erp.example.com/entity?api-key=K3Y-value failed")
    stored = one_line(failure)  # what the runs table keeps and `sync status` prints
    assert "erp.example.com/entity" in stored and not [s for s in SECRETS if s in stored]
