"""The embedder's vectors of benchmark texts, kept on disk between runs (``.cache/``, git-ignored).

The public dev split holds ~51,000 distinct turns (50 M characters, plus the further parts of long
turns): embedding them takes most of an hour on two cores, and the vectors depend only on the model
and the text. A benchmark wraps the embedder with :class:`CachedEmbedder`: texts seen before (in this
run or an earlier one, by the same model) are read back, the others embedded and stored. Recall's
ranking and the import path are unchanged: they get the vectors the embedder would have made.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
CACHE_DIR = ROOT / ".cache" / "embeddings"


def _key(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class DiskVectors:
    """Vectors by text for one model, in one SQLite file (safe to share between processes)."""

    def __init__(self, model_id: str, dimension: int, directory: Path = CACHE_DIR) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.dimension = dimension
        self._db = sqlite3.connect(directory / f"{model_id}.sqlite3", check_same_thread=False, timeout=60)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS v (key TEXT PRIMARY KEY, vec BLOB NOT NULL)")
        self._lock = threading.Lock()

    def get(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        keys = {_key(t): t for t in texts}
        items = list(keys)
        with self._lock:
            for start in range(0, len(items), 500):
                chunk = items[start : start + 500]
                marks = ",".join("?" * len(chunk))
                for key, blob in self._db.execute(f"SELECT key, vec FROM v WHERE key IN ({marks})", chunk):
                    found[keys[key]] = np.frombuffer(blob, dtype=np.float32)
        return found

    def put(self, vectors: dict[str, np.ndarray]) -> None:
        rows = [(_key(t), np.asarray(v, dtype=np.float32).tobytes()) for t, v in vectors.items()]
        with self._lock:
            self._db.executemany("INSERT OR REPLACE INTO v VALUES (?, ?)", rows)
            self._db.commit()

    def count(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT count(*) FROM v").fetchone()[0])


class CachedEmbedder:
    """Within ``with``: ``embedder.embed`` reads known texts from memory or disk and embeds the rest."""

    def __init__(self, embedder: Any) -> None:
        self.embedder = embedder
        self.disk = DiskVectors(embedder.model_id, embedder.dimension)
        self.seen: dict[str, np.ndarray] = {}
        self.embedded = 0

    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        todo = [t for t in dict.fromkeys(texts) if t not in self.seen]
        if todo:
            self.seen.update(self.disk.get(todo))
            missing = [t for t in todo if t not in self.seen]
            if missing:
                made = np.asarray(self._original(missing), dtype=np.float32)
                fresh = dict(zip(missing, made, strict=True))
                self.disk.put(fresh)
                self.seen.update(fresh)
                self.embedded += len(missing)
        if not texts:
            return np.zeros((0, self.embedder.dimension), dtype=np.float32)
        return np.stack([self.seen[t] for t in texts])

    def __enter__(self) -> CachedEmbedder:
        self._original = self.embedder.embed
        self.embedder.embed = self.vectors
        return self

    def __exit__(self, *exc: object) -> None:
        del self.embedder.embed
