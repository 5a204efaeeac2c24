"""Bounded IN lists: every item once, in order, no piece longer than asked."""

from __future__ import annotations

import pytest

from connector.db.chunks import chunks


def test_pieces_keep_every_item_in_order_and_stay_within_the_size() -> None:
    items = [f"id{i}" for i in range(1001)]
    pieces = list(chunks(items, 500))
    assert [len(p) for p in pieces] == [500, 500, 1]
    assert [i for p in pieces for i in p] == items


def test_an_empty_list_gives_no_statement() -> None:
    assert list(chunks([], 300)) == []


def test_a_size_below_one_is_refused_instead_of_looping() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        list(chunks(["a"], 0))
