"""The lexical tokenizer: dates, amounts, names and document numbers become the same terms however
they are written, and queries are plain text (nothing in them is syntax)."""

from __future__ import annotations

from datetime import date

import pytest

from connector.lexical.tokens import MAX_QUERY_TERMS, _fold, date_terms, fold_unicode, query_terms, terms


@pytest.mark.parametrize(
    "spelling", ["14 March", "14th of March", "March 14th", "Mar. 14", "2026-03-14", "on 14 march 2026"]
)
def test_every_spelling_of_a_date_gives_its_month_day_term(spelling: str) -> None:
    assert "d0314" in terms(spelling) and "march" in terms(spelling)


def test_a_case_date_is_indexed_under_the_terms_a_question_uses() -> None:
    assert set(terms("the 14 March 2026 call")) >= set(date_terms(date(2026, 3, 14)))


@pytest.mark.parametrize(("written", "term"), [("1,250.00", "1250"), ("1250", "1250"), ("312.40", "312.4")])
def test_amounts_lose_separators_and_trailing_zeros(written: str, term: str) -> None:
    assert terms(f"a credit of {written} USD") == ["credit", term, "usd"]


def test_a_document_number_is_one_term_plus_its_digits_in_any_spelling() -> None:
    assert terms("INV-004821") == terms("inv004821") == terms("inv#004821") == ["inv004821", "004821"]


def test_names_fold_case_accents_and_possessives() -> None:
    assert terms("José's") == terms("JOSE") == terms("jose") == ["jose"]


def test_word_forms_share_a_stem_and_stop_words_are_dropped() -> None:
    assert terms("we were charged twice") == terms("charges twice") == ["charg", "twic"]
    assert terms("billing") == terms("billed") == terms("bills") == ["bill"]


@pytest.mark.parametrize("query", ["!!! ??? ...", "what is the", "", "   ", '" * : - ()'])
def test_queries_without_words_have_no_terms(query: str) -> None:
    assert query_terms(query) == []


def test_full_text_operators_are_ordinary_words_or_separators() -> None:
    assert query_terms('"credit memo" OR refund* NEAR(tax) -freight column:value') == [
        "credit", "memo", "refund", "near", "tax", "freight", "column", "valu",
    ]  # fmt: skip


def test_a_huge_query_is_capped_in_terms() -> None:
    query = " ".join(f"word{i}x" for i in range(200_000))  # ~1.6 MB
    assert len(query_terms(query)) == MAX_QUERY_TERMS


def test_ascii_text_folds_as_the_unicode_path_folds_it() -> None:
    """Plain ASCII skips normalisation (the ingest's hot path): it must give the very same terms."""
    every = "".join(map(chr, range(128)))
    texts = [every, every.upper(), "Anna's INV-004821 of 14 March: 1,250.00 USD CHARGED\tdon't"]
    for text in texts:
        assert _fold(text) == fold_unicode(text)
    assert terms("José's CAFÉ") == terms("jose cafe")  # and non-ASCII still folds its accents
