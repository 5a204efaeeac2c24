"""The shared paginators: offsets until a short page, next links on the same host, no loops."""

from __future__ import annotations

import httpx
import pytest

from connector.adapters.paging import NextLinkPaginator, OffsetPaginator, SeenPages
from connector.errors import ERPProtocolError

START = httpx.URL("https://erp.example/odata/Items")


def _links(visited: set[str] | None = None) -> NextLinkPaginator:
    return NextLinkPaginator(
        START,
        on_loop=lambda current, link: ERPProtocolError(f"loop at {link}"),
        on_foreign=lambda current, link: ERPProtocolError(f"foreign {link.host}"),
        visited=visited,
    )


def test_offsets_advance_by_what_came_and_stop_at_a_short_page() -> None:
    offsets = OffsetPaginator(100)
    offsets.advance(100)
    assert (offsets.current, offsets.finished) == (100, False)
    offsets.advance(40)
    assert offsets.finished and offsets.current == 100


def test_a_page_size_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="page_size"):
        OffsetPaginator(0)


def test_next_links_are_joined_to_the_current_url_until_there_is_none() -> None:
    links = _links()
    links.advance("Items?$skiptoken=2")
    assert links.current == "https://erp.example/odata/Items?$skiptoken=2"
    links.advance(None)
    assert links.finished


def test_a_next_link_that_came_before_is_a_loop_also_from_a_later_window() -> None:
    visited: set[str] = set()
    _links(visited).advance("Items?$skiptoken=2")
    with pytest.raises(ERPProtocolError, match="loop at"):
        _links(visited).advance("Items?$skiptoken=2")


def test_a_next_link_to_another_host_is_refused() -> None:
    with pytest.raises(ERPProtocolError, match=r"foreign evil\.example"):
        _links().advance("https://evil.example/steal")


def test_seen_pages_name_the_first_page_with_the_same_content() -> None:
    seen = SeenPages()
    assert seen.repeat_of(("a", "b"), "0") is None
    assert seen.repeat_of(("c",), "1") is None
    assert seen.repeat_of(("a", "b"), "2") == "0"
