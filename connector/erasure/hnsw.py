"""Zeroing what embedded Chroma's HNSW files hold past their last element.

When Chroma starts an HNSW segment (the first write of a process to a collection that has not yet
persisted its index, a new collection, a rebuild), its hnswlib writes the whole level-0 buffer and
the lengths buffer to ``data_level0.bin`` and ``length.bin``: ``max_elements`` slots (100 at first)
of memory taken from ``malloc`` and never cleared. The slots past the last element therefore hold
whatever that process's heap held before: freed copies of other records' metadata, SQL text,
an erased customer's id and case ids. A process that has just handled a customer and then forgets
it (or rebuilds the index after forgetting it) can so write the customer back into the new files;
a fresh process's heap has not seen the customer, which is why only in-process runs showed it.

hnswlib never reads those slots (an element's slot is cleared when the element is added), so they
are zeroed here: after every write of this process to an embedded collection, and at the end of
``forget`` and ``reindex --rebuild``. Header layout (hnswlib's persisted index, version 1): int32
version, then ``size_t`` offsetLevel0, max_elements, cur_element_count, size_data_per_element.

Chroma writes these files only inside a write call: :data:`WRITES` serialises this process's
writes and the zeroing per directory. Embedded Chroma is one process's store (Chroma's own rule).
"""

from __future__ import annotations

import logging
import os
import struct
import threading
import uuid
from pathlib import Path

from connector.errors import StoreError

log = logging.getLogger(__name__)

_HEADER = struct.Struct("<i4Q")  # version, offsetLevel0, max_elements, cur_element_count, size per element
_VERSION = 1
_FLOAT = 4  # length.bin: one float32 per element
_BLOCK = 1 << 16


class _DirectoryLocks:
    """One lock per Chroma directory: a write call and the zeroing never overlap in this process."""

    def __init__(self) -> None:
        self._locks: dict[Path, threading.RLock] = {}
        self._guard = threading.Lock()

    def of(self, chroma_dir: Path) -> threading.RLock:
        key = chroma_dir.resolve()
        with self._guard:
            return self._locks.setdefault(key, threading.RLock())


WRITES = _DirectoryLocks()


def scrub_segment_slack(chroma_dir: Path) -> int:
    """Zero the bytes past the last element in every HNSW segment under ``chroma_dir``; returns
    how many bytes were not zero."""
    if not chroma_dir.is_dir():
        return 0
    zeroed = 0
    with WRITES.of(chroma_dir):
        for segment in sorted(chroma_dir.iterdir()):
            if _is_segment_dir(segment):
                try:
                    zeroed += _scrub_segment(segment)
                except OSError as exc:
                    raise StoreError(
                        f"zeroing the unused part of Chroma's index files in {segment} failed: {exc}"
                    ) from None
    return zeroed


def _scrub_segment(segment: Path) -> int:
    header = _read_header(segment / "header.bin")
    if header is None:
        return 0
    elements, per_element = header
    return _zero_tail(segment / "data_level0.bin", elements * per_element) + _zero_tail(
        segment / "length.bin", elements * _FLOAT
    )


def _read_header(path: Path) -> tuple[int, int] | None:
    """(elements, bytes per element) of a persisted index, or None if it is not one we know."""
    try:
        raw = path.read_bytes()[: _HEADER.size]
    except OSError:
        return None
    if len(raw) < _HEADER.size:
        return None
    version, _offset, max_elements, elements, per_element = _HEADER.unpack(raw)
    if version != _VERSION or per_element == 0 or elements > max_elements:
        log.debug("HNSW header %s not understood (version %s): left as it is", path, version)
        return None
    return elements, per_element


def _zero_tail(path: Path, start: int) -> int:
    """Overwrite the non-zero blocks of ``path`` from ``start`` on with zeros (zero blocks, and
    holes of a sparse file, are left as they are)."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return 0
    if size <= start:
        return 0
    found = 0
    with path.open("r+b") as file:
        offset = start
        while offset < size:
            file.seek(offset)
            block = file.read(min(_BLOCK, size - offset))
            if not block:
                break
            dirty = len(block) - block.count(0)
            if dirty:
                found += dirty
                file.seek(offset)
                file.write(bytes(len(block)))
            offset += len(block)
        if found:
            file.flush()
            os.fsync(file.fileno())
    return found


def _is_segment_dir(path: Path) -> bool:
    try:
        uuid.UUID(path.name)
    except ValueError:
        return False
    return path.is_dir()
