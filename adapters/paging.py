"""Paging, one small class per style, shaped like the Singer SDK's paginators.

A paginator holds where a read is (``current``), decides from the page that just came whether
there is more (``has_more``) and where it is (``get_next``), and ``advance`` moves there. It
refuses to go back to a position it has been at: a server that ignores ``$skip`` or repeats a
next link would otherwise be read for ever. Both ERPs page the same way with these:

- :class:`OffsetPaginator`: ``$top``/``$skip`` windows until one comes back short (Acumatica has
  nothing else; SAP asks for windows too);
- :class:`NextLinkPaginator`: the server's next link (SAP's ``__next`` / ``@odata.nextLink``),
  refused when it points at another host, which would receive our credentials;
- :class:`SeenPages`: the content check both need, since an offset always advances even when the
  server ignores it: a page whose records were already read means the read is going round.

What a loop or a foreign link is called in an error message is the adapter's to say (it knows the
entity and the URL), so the paginators take a small function that builds the error.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

import httpx

from connector.errors import ERPError, ERPProtocolError

T = TypeVar("T", bound=Hashable)  # a position: an offset, a URL
P = TypeVar("P")  # what a paginator reads from a page: a row count, a next link


class Paginator(ABC, Generic[T, P]):
    """A read's position; :meth:`advance` moves it after each page, or marks the read finished."""

    def __init__(self, start: T, *, visited: set[T] | None = None) -> None:
        self.current: T = start
        self.finished = False
        self._visited: set[T] = visited if visited is not None else set()
        self._visited.add(start)

    @abstractmethod
    def has_more(self, page: P) -> bool:
        """Whether another page follows the one described by ``page``."""

    @abstractmethod
    def get_next(self, page: P) -> T:
        """The position of the next page (called only when :meth:`has_more`)."""

    @abstractmethod
    def loop_error(self, repeated: T) -> ERPError:
        """The error for a position that came twice."""

    def advance(self, page: P) -> None:
        if not self.has_more(page):
            self.finished = True
            return
        position = self.get_next(page)
        if position in self._visited:
            raise self.loop_error(position)
        self._visited.add(position)
        self.current = position


class OffsetPaginator(Paginator[int, int]):
    """``$skip`` offsets: the page is the number of rows it brought; a short one is the last."""

    def __init__(self, page_size: int) -> None:
        if page_size < 1:
            raise ValueError("page_size must be at least 1")
        super().__init__(0)
        self.page_size = page_size

    def has_more(self, page: int) -> bool:
        return page >= self.page_size

    def get_next(self, page: int) -> int:
        return self.current + page

    def loop_error(self, repeated: int) -> ERPError:
        # Offsets only grow, so this cannot happen; a server ignoring $skip shows in SeenPages.
        return ERPProtocolError(f"paging went back to $skip={repeated}")


class NextLinkPaginator(Paginator[str, str | None]):
    """Server-driven paging: the page is the next link it carried (None or empty: the last page).

    Relative links are joined to the current URL. ``visited`` may be shared by the paginators of
    one read, so a link that comes back in a later window is still a loop.
    """

    def __init__(
        self,
        start: httpx.URL,
        *,
        on_loop: Callable[[httpx.URL, httpx.URL], ERPError],
        on_foreign: Callable[[httpx.URL, httpx.URL], ERPError],
        visited: set[str] | None = None,
    ) -> None:
        super().__init__(str(start), visited=visited)
        self._origin = origin(start)
        self._on_loop = on_loop
        self._on_foreign = on_foreign

    @property
    def url(self) -> httpx.URL:
        return httpx.URL(self.current)

    def has_more(self, page: str | None) -> bool:
        return bool(page)

    def get_next(self, page: str | None) -> str:
        assert page
        target = self.url.join(page)
        if origin(target) != self._origin:
            raise self._on_foreign(self.url, target)
        return str(target)

    def loop_error(self, repeated: str) -> ERPError:
        return self._on_loop(self.url, httpx.URL(repeated))


def origin(url: httpx.URL) -> tuple[str, str, int | None]:
    """(scheme, host, port) with the default port filled in: what "the same server" means."""
    port = url.port or {"http": 80, "https": 443}.get(url.scheme)
    return url.scheme, url.host.lower(), port


class SeenPages:
    """The fingerprints of the pages a read has had, each with the label of where it came."""

    def __init__(self) -> None:
        self._first: dict[Hashable, str] = {}

    def repeat_of(self, fingerprint: Hashable, label: str) -> str | None:
        """The label of the earlier page with this fingerprint, or None (and remember this one)."""
        earlier = self._first.get(fingerprint)
        if earlier is None:
            self._first[fingerprint] = label
        return earlier
