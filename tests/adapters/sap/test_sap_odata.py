"""OData v2/v4 decoding: values, envelopes, expansions and error bodies."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, time
from decimal import Decimal

import pytest

from connector.adapters.sap.catalog import load_catalog
from connector.adapters.sap.odata import (
    decode_entity,
    parse_collection,
    parse_error,
    parse_json,
    parse_single,
)
from connector.adapters.sap.values import (
    MalformedValue,
    decode_bool,
    decode_date,
    decode_datetime,
    decode_decimal,
    decode_time,
    jsonable,
)
from connector.errors import ERPProtocolError


def test_v2_date_is_milliseconds_since_epoch() -> None:
    assert decode_date("/Date(1471392000000)/") == date(2016, 8, 17)


def test_v2_datetimeoffset_is_the_utc_instant_whatever_its_offset_suffix() -> None:
    expected = datetime(2016, 9, 2, 6, 15, 47, 125000, tzinfo=UTC)
    assert decode_datetime("/Date(1472796947125+0000)/") == expected
    assert decode_datetime("/Date(1472796947125+0060)/") == expected


def test_dates_before_1970_decode() -> None:
    assert decode_date("/Date(-86400000)/") == date(1969, 12, 31)


def test_v4_dates_and_timestamps_are_iso() -> None:
    assert decode_date("2024-05-01") == date(2024, 5, 1)
    assert decode_datetime("2024-05-01T10:00:00Z") == datetime(2024, 5, 1, 10, tzinfo=UTC)
    assert decode_datetime("2024-05-01T12:00:00+02:00") == datetime(2024, 5, 1, 10, tzinfo=UTC)


def test_edm_time_duration_and_v4_time_of_day_decode_alike() -> None:
    assert decode_time("PT17H49M05S") == time(17, 49, 5)
    assert decode_time("17:49:05") == time(17, 49, 5)
    assert decode_time("PT0H0M0.5S") == time(0, 0, 0, 500000)


def test_a_duration_of_a_day_or_more_is_not_a_time() -> None:
    with pytest.raises(MalformedValue):
        decode_time("PT24H00M00S")


def test_decimals_as_strings_or_numbers_become_exact_decimals() -> None:
    assert decode_decimal("52.65") == Decimal("52.65")
    assert decode_decimal(Decimal("52.65")) == Decimal("52.65")
    assert decode_decimal(7) == Decimal(7)


@pytest.mark.parametrize("bad", ["abc", "NaN", True, [1]])
def test_a_non_decimal_is_refused(bad: object) -> None:
    with pytest.raises(MalformedValue):
        decode_decimal(bad)


def test_null_is_none_for_every_type() -> None:
    assert decode_date(None) is None and decode_time(None) is None and decode_bool(None) is None


def test_a_garbled_timestamp_is_refused_with_the_value() -> None:
    with pytest.raises(MalformedValue, match="Date"):
        decode_datetime("/Date(abc)/")


def test_v2_collection_carries_rows_next_link_and_count() -> None:
    body = {"d": {"results": [{"a": 1}], "__count": "12", "__next": "https://h/x?$skiptoken=1"}}
    page = parse_collection(body, "v2")
    assert page.rows == [{"a": 1}] and page.count == 12 and page.next_link == "https://h/x?$skiptoken=1"


def test_v4_collection_carries_rows_next_link_and_count() -> None:
    body = {
        "@odata.context": "$metadata#X",
        "@odata.count": 3,
        "value": [{"a": 1}],
        "@odata.nextLink": "X?n=2",
    }
    page = parse_collection(body, "v4")
    assert page.rows == [{"a": 1}] and page.count == 3 and page.next_link == "X?n=2"


def test_a_v4_body_read_as_v2_is_a_protocol_error() -> None:
    with pytest.raises(ERPProtocolError, match="v2 collection"):
        parse_collection({"value": []}, "v2")


def test_single_entity_envelopes() -> None:
    assert parse_single({"d": {"BusinessPartner": "1"}}, "v2") == {"BusinessPartner": "1"}
    assert parse_single({"BusinessPartner": "1"}, "v4") == {"BusinessPartner": "1"}
    with pytest.raises(ERPProtocolError):
        parse_single({"d": {"results": []}}, "v2")


def test_json_keeps_decimals_exact_and_refuses_garbage() -> None:
    assert parse_json(b'{"x": 0.1}', what="page") == {"x": Decimal("0.1")}
    with pytest.raises(ERPProtocolError, match="not valid JSON"):
        parse_json(b"<html>", what="page")


def test_v2_error_body_gives_code_message_and_details() -> None:
    body = {
        "error": {
            "code": "/IWBEP/CM_MGW_RT/022",
            "message": {"lang": "en", "value": "Invalid filter"},
            "innererror": {"transactionid": "ABC", "errordetails": [{"code": "X", "message": "m"}]},
        }
    }
    info = parse_error(json.dumps(body).encode())
    assert info is not None
    assert (info.code, info.message, info.transaction_id) == ("/IWBEP/CM_MGW_RT/022", "Invalid filter", "ABC")
    assert info.details == [{"code": "X", "message": "m"}]


def test_v4_error_body_gives_code_and_message() -> None:
    info = parse_error(b'{"error": {"code": "SY/530", "message": "No authorization", "details": []}}')
    assert info is not None and (info.code, info.message) == ("SY/530", "No authorization")


def test_a_logon_page_is_not_an_odata_error() -> None:
    assert parse_error(b"<html>Logon failed</html>") is None


def test_entity_decoding_drops_annotations_and_deferred_and_unwraps_expansions() -> None:
    catalog = load_catalog()
    row = {
        "__metadata": {"uri": "https://h/A_BusinessPartner('1')", "type": "T"},
        "BusinessPartner": "1",
        "CreationDate": "/Date(1471392000000)/",
        "CreationTime": "PT10H00M00S",
        "to_BusinessPartnerAddress": {"__deferred": {"uri": "https://h/x"}},
        "to_Customer": {
            "__metadata": {},
            "Customer": "1",
            "to_CustomerCompany": {"results": [{"CompanyCode": "1010"}]},
        },
        "to_Supplier": None,
        "Unknown": "kept",
    }
    entity = decode_entity(row, catalog.entity("A_BusinessPartner"), catalog)
    assert entity == {
        "BusinessPartner": "1",
        "CreationDate": date(2016, 8, 17),
        "CreationTime": time(10),
        "to_Customer": {"Customer": "1", "to_CustomerCompany": [{"CompanyCode": "1010"}]},
        "to_Supplier": None,
        "Unknown": "kept",
    }


def test_a_bad_value_names_the_entity_and_field() -> None:
    catalog = load_catalog()
    with pytest.raises(MalformedValue, match=r"A_SalesOrder\.TotalNetAmount"):
        decode_entity({"TotalNetAmount": "12,50"}, catalog.entity("A_SalesOrder"), catalog)


def test_jsonable_turns_decoded_values_into_stable_json() -> None:
    value = {
        "d": date(2024, 5, 1),
        "t": datetime(2024, 5, 1, 10, tzinfo=UTC),
        "m": Decimal("1.50"),
        "l": [time(1)],
    }
    assert jsonable(value) == {
        "d": "2024-05-01",
        "t": "2024-05-01T10:00:00+00:00",
        "m": "1.50",
        "l": ["01:00:00"],
    }
