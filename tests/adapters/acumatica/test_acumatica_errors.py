"""Acumatica's error bodies decoded into the error tree (retry or not is decided here)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from connector.adapters.acumatica.client import choose_version
from connector.adapters.acumatica.errors import decoder
from connector.adapters.http import SessionExpired
from connector.errors import (
    ERPAuthError,
    ERPError,
    ERPNotFound,
    ERPProtocolError,
    ERPRateLimited,
    ERPRequestError,
    ERPServerError,
)


def decode(status: int, body: Any = None, retry_after: float | None = None) -> ERPError:
    content = json.dumps(body).encode() if body is not None else b""
    request = httpx.Request("GET", "https://erp.test/entity/Default/24.200.001/Customer?$filter=x")
    return decoder("t1")(httpx.Response(status, content=content, request=request), retry_after)


NOT_FOUND = "PX.Api.ContractBased.NoEntitySatisfiesTheConditionException"
OAUTH_BAD_PASSWORD = {"error": "invalid_grant", "error_description": "invalid_username_or_password"}


def px(message: str, kind: str = "PX.Data.PXException") -> dict[str, str]:
    return {"message": "An error has occurred.", "exceptionMessage": message, "exceptionType": kind}


@pytest.mark.parametrize(
    ("status", "body", "error", "retriable"),
    [
        (500, px("No entity satisfies the condition.", NOT_FOUND), ERPNotFound, False),
        (500, px("Error: Invalid credentials. Please try again."), ERPAuthError, False),
        (500, px("API Login Limit"), ERPRateLimited, True),
        (500, px("Inserting 'Customer' record raised at least one error."), ERPRequestError, False),
        (500, px("Updated by another process.", "PX.Data.PXLockViolationException"), ERPServerError, True),
        (500, px("Timeout expired.", "System.Data.SqlClient.SqlException"), ERPServerError, True),
        (500, None, ERPServerError, True),
        (503, None, ERPServerError, True),
        (401, {"message": "You are not logged in."}, SessionExpired, False),
        (403, px("You have insufficient rights to access the object (Customers)."), ERPAuthError, False),
        (422, {"message": "The request is invalid."}, ERPRequestError, False),
        (429, {"message": "API request limit exceeded."}, ERPRateLimited, True),
        (400, OAUTH_BAD_PASSWORD, ERPAuthError, False),
        (400, {"error": "unsupported_grant_type"}, ERPRequestError, False),
    ],
)
def test_each_answer_becomes_the_right_error(
    status: int, body: Any, error: type[ERPError], retriable: bool
) -> None:
    decoded = decode(status, body)
    assert type(decoded) is error
    assert decoded.retriable is retriable
    assert decoded.status_code == status
    assert decoded.tenant == "t1"


def test_the_error_carries_the_erp_fields_and_a_readable_message() -> None:
    error = decode(
        500,
        px(
            "No entity satisfies the condition.",
            "PX.Api.ContractBased.NoEntitySatisfiesTheConditionException",
        ),
    )
    assert error.exception_type == "PX.Api.ContractBased.NoEntitySatisfiesTheConditionException"
    assert error.exception_message == "No entity satisfies the condition."
    text = str(error)
    assert text.startswith(
        "Acumatica GET https://erp.test/entity/Default/24.200.001/Customer failed with HTTP 500"
    )
    assert "NoEntitySatisfiesTheConditionException: No entity satisfies the condition." in text
    assert "$filter" not in text


def test_rate_limited_carries_retry_after() -> None:
    error = decode(429, None, retry_after=12.0)
    assert isinstance(error, ERPRateLimited) and error.retry_after == 12.0


def test_a_non_json_body_is_quoted_briefly() -> None:
    request = httpx.Request("GET", "https://erp.test/entity")
    error = decoder()(httpx.Response(502, text="<html>Bad gateway " + "x" * 500, request=request), None)
    assert "Bad gateway" in str(error) and len(str(error)) < 400


def test_version_choice_prefers_the_newest_supported() -> None:
    index = {
        "endpoints": [{"name": "Default", "version": v} for v in ("22.200.001", "25.200.001", "30.100.001")]
    }
    index["endpoints"].append({"name": "Manufacturing", "version": "26.200.001"})
    assert choose_version(index) == "25.200.001"
    unsupported = {"endpoints": [{"name": "Default", "version": v} for v in ("30.100.001", "19.100.001")]}
    with pytest.raises(
        ERPProtocolError, match=r"version\(s\) 19\.100\.001, 30\.100\.001; this project supports 20"
    ):
        choose_version(unsupported)
    with pytest.raises(ERPProtocolError, match="no 'Default' endpoint"):
        choose_version({"endpoints": [{"name": "eCommerce", "version": "24.200.001"}]})
    with pytest.raises(ERPProtocolError, match="endpoints"):
        choose_version(["24.200.001"])
