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
are zeroed here: after every write of this process to an embedded collection (and after its first
read of each collection, which starts a segment the same way), and at the end of
``forget`` and ``reindex --rebuild``. Header layout (hnswlib's persisted index, version 1): int32
version, then ``size_t`` offsetLevel0, max_elements, cur_element_count, size_data_per_element.

Chroma writes these files inside a write call, or the first read of a collection on a client:
the directory's lock (:mod:`connector.vectors.lock`) orders those and the zeroing, across threads
and processes.
Chroma rewrites them only when it starts a segment or persists one (every ``sync_threshold``
added vectors), so most writes leave them as they were: a segment found clean is not read again
while its files keep the identity, size and change times they had then (:class:`_CleanSegments`).
"""

from __future__ import annotations

import logging
import os
import struct
import time
import uuid
from pathlib import Path

from connector.errors import StoreError
from connector.vectors.lock import LOCK_WAIT_S, lock_of

log = logging.getLogger(__name__)

_HEADER = struct.Struct("<i4Q")  # version, offsetLevel0, max_elements, cur_element_count, size per element
_VERSION = 1
_FLOAT = 4  # length.bin: one float32 per element
_BLOCK = 1 << 16
_FILES = ("header.bin", "data_level0.bin", "length.bin")
# A file changed this recently may change again within the same timestamp tick, unseen by its
# stat: it is read again next time (2 s: the coarsest common timestamp, FAT's; ext4's is a tick).
_RACY_NS = 2_000_000_000
FileStamp = tuple[int, int, int, int, int] | None  # device, inode, size, mtime, ctime (ns); None: absent


class _CleanSegments:
    """The stamps of each segment's files when it was last found clean, by segment directory.

    A stamp is kept only once its change time is older than :data:`_RACY_NS` at the check (the
    rule git uses for racily clean files): a later change then gets a later change time, which the
    inode's ``ctime`` records whatever ``utime`` sets, so an equal stamp means unchanged files.
    """

    def __init__(self) -> None:
        self._stamps: dict[Path, tuple[FileStamp, ...]] = {}

    def unchanged(self, segment: Path, stamps: tuple[FileStamp, ...]) -> bool:
        return self._stamps.get(segment) == stamps

    def found_clean(self, segment: Path, checked_at_ns: int) -> None:
        stamps = _stamps(segment)
        if all(s is None or s[4] < checked_at_ns - _RACY_NS for s in stamps):
            self._stamps[segment] = stamps
        else:
            self._stamps.pop(segment, None)

    def keep_only(self, chroma_dir: Path, segments: set[Path]) -> None:
        """Forget segments of ``chroma_dir`` that are gone (a rebuild drops them)."""
        for segment in [s for s in self._stamps if s.parent == chroma_dir and s not in segments]:
            del self._stamps[segment]


_CLEAN = _CleanSegments()


def scrub_segment_slack(chroma_dir: Path, *, timeout: float = LOCK_WAIT_S) -> int:
    """Zero the bytes past the last element in every HNSW segment under ``chroma_dir``; returns
    how many bytes were not zero. Segments unchanged since they were last found clean are skipped."""
    if not chroma_dir.is_dir():
        return 0
    zeroed = 0
    chroma_dir = chroma_dir.resolve()
    with lock_of(chroma_dir).exclusive(timeout, changes=False):
        segments = {segment for segment in chroma_dir.iterdir() if _is_segment_dir(segment)}
        _CLEAN.keep_only(chroma_dir, segments)
        for segment in sorted(segments):
            try:
                checked_at = time.time_ns()
                if _CLEAN.unchanged(segment, _stamps(segment)):
                    continue
                zeroed += _scrub_segment(segment)
                _CLEAN.found_clean(segment, checked_at)
            except OSError as exc:
                raise StoreError(
                    f"zeroing the unused part of Chroma's index files in {segment} failed: {exc}"
                ) from None
    return zeroed


def _stamps(segment: Path) -> tuple[FileStamp, ...]:
    found: list[FileStamp] = []
    for name in _FILES:
        try:
            st = os.stat(segment / name)
        except FileNotFoundError:
            found.append(None)
        else:
            found.append((st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
    return tuple(found)


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
