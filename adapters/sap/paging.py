"""Walk an OData collection page by page, by ``$top``/``$skip`` windows and server ``__next`` links.

SAP services differ: some page on the server (``__next`` / ``@odata.nextLink`` with a
``$skiptoken``), others return exactly what ``$top``/``$skip`` ask for. The walker handles both:
it asks for a window of ``page_size`` rows, follows next links inside it, and asks for the next
window while the previous one came back full. It refuses a next link to another host (it would
carry our credentials there) and stops with an error, not a loop, when a page or a link repeats
(a server that ignores ``$skip``, or a cursor that does not advance). The windows, the links and
the repeat check are the shared :mod:`connector.adapters.paging` classes Acumatica pages with too.

A query with ``keyset`` set pages by key instead (what the adapter's reads do): ordered by the key
fields, each request asks for the rows after the last key read (``Key gt 'last'``, expanded for
compound keys). ``$skip`` is not a snapshot: a record deleted from a page already read moves every
later record one place up and one of them would never be read; a key is a fixed position, so
inserts, deletes and updates on pages already read cannot make the read skip one. Server-driven
next links are then not followed (their ``$skiptoken`` is an offset on many services): the next
request starts after the last key instead, and a link to another host is still refused.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass

import httpx

from connector.adapters.http import safe_url
from connector.adapters.paging import NextLinkPaginator, OffsetPaginator, SeenPages, origin
from connector.adapters.sap.catalog import ODataVersion
from connector.adapters.sap.client import SAPClient
from connector.adapters.sap.odata import CollectionPage, parse_collection
from connector.adapters.sap.query import all_of, string_literal
from connector.errors import ERPProtocolError


@dataclass(frozen=True, slots=True)
class Query:
    """One collection read: absolute URL, query options, the key fields that fingerprint a page."""

    url: str
    params: dict[str, str]
    key_fields: tuple[str, ...]
    count: bool = False  # ask for $inlinecount / $count on the first request
    keyset: bool = False  # page by key (``key_fields``, which ``$orderby`` must list) instead of $skip
    version: ODataVersion | None = None  # the service's OData version (default: the tenant's)


def _fingerprint(page: CollectionPage, key_fields: tuple[str, ...]) -> str:
    digest = hashlib.sha256()
    for row in page.rows:
        key = tuple(row.get(k) for k in key_fields) if isinstance(row, dict) else (None,)
        digest.update(repr(key if any(part is not None for part in key) else row).encode())
        digest.update(b"\x00")
    return digest.hexdigest()


class PageWalker:
    """Iterate the raw pages of a :class:`Query`; see the module docstring."""

    def __init__(self, client: SAPClient, query: Query, *, page_size: int) -> None:
        self.client = client
        self.query = query
        self.page_size = page_size
        self.version: ODataVersion = query.version or client.version
        self.total: int | None = None
        self._seen_pages = SeenPages()
        self._seen_links: set[str] = set()

    def __iter__(self) -> Iterator[CollectionPage]:
        if self.query.keyset:
            yield from self._by_key()
            return
        windows = OffsetPaginator(self.page_size)
        while not windows.finished:
            skip = windows.current
            params = {**self.query.params, "$top": str(self.page_size), "$skip": str(skip)}
            if self.query.count and skip == 0:
                params["$inlinecount" if self.version == "v2" else "$count"] = (
                    "allpages" if self.version == "v2" else "true"
                )
            url = httpx.URL(self.query.url)
            page = self._fetch(str(url), params, where=f"$skip={skip}")
            if page.count is not None:
                self.total = page.count
            links = NextLinkPaginator(
                url, on_loop=self._repeated_link, on_foreign=self._foreign_link, visited=self._seen_links
            )
            in_window = 0
            while True:
                yield page
                in_window += len(page.rows)
                links.advance(page.next_link)
                if links.finished:
                    break
                page = self._fetch(links.current, None, where="the next link")
            windows.advance(in_window)

    def _by_key(self) -> Iterator[CollectionPage]:
        """Pages of ``page_size`` rows in key order, each request starting after the last key read."""
        url = httpx.URL(self.query.url)
        base_filter = self.query.params.get("$filter")
        after: tuple[str, ...] | None = None
        while True:
            params = {**self.query.params, "$top": str(self.page_size)}
            if after is None and self.query.count:
                params["$inlinecount" if self.version == "v2" else "$count"] = (
                    "allpages" if self.version == "v2" else "true"
                )
            if after is not None:
                params["$filter"] = all_of(base_filter, keyset_filter(self.query.key_fields, after)) or ""
            where = "the first page" if after is None else f"after key {'/'.join(after)}"
            page = self._fetch(str(url), params, where=where)
            if after is None and page.count is not None:
                self.total = page.count
            if page.next_link:
                target = url.join(page.next_link)
                if origin(target) != origin(url):
                    raise self._foreign_link(url, target)
            yield page
            if not page.rows:
                return
            last = self._key_of(page.rows[-1])
            if after is not None and last <= after:
                raise ERPProtocolError(
                    f"SAP answered {safe_url(str(url))} with keys that do not follow {'/'.join(after)}; "
                    "the service ignores the key filter or the order by key. Stopping instead of looping",
                    tenant=self.client.tenant.name,
                )
            after = last
            if len(page.rows) < self.page_size and not page.next_link:
                return

    def _key_of(self, row: object) -> tuple[str, ...]:
        values = [row.get(name) if isinstance(row, dict) else None for name in self.query.key_fields]
        if not all(isinstance(v, (str, int)) and not isinstance(v, bool) for v in values):
            raise ERPProtocolError(
                f"SAP sent a row without its key field(s) {', '.join(self.query.key_fields)}; "
                "a read by key cannot go on after it",
                tenant=self.client.tenant.name,
            )
        return tuple(str(v) for v in values)

    def _fetch(self, url: str, params: dict[str, str] | None, *, where: str) -> CollectionPage:
        page = parse_collection(self.client.get_json(url, params, self.version), self.version)
        fingerprint = _fingerprint(page, self.query.key_fields) if page.rows else None
        if fingerprint is not None and self._seen_pages.repeat_of(fingerprint, where) is not None:
            raise ERPProtocolError(
                f"SAP returned the same page twice for {safe_url(url)} ({where}, {len(page.rows)} rows "
                "already read); the server ignores $skip or repeats its next link. Stopping instead "
                "of looping; lower page_size or report the service to the SAP team",
                tenant=self.client.tenant.name,
            )
        return page

    def _foreign_link(self, current: httpx.URL, target: httpx.URL) -> ERPProtocolError:
        return ERPProtocolError(
            f"SAP sent a next link to another host ({target.scheme}://{target.host}) while reading "
            f"{safe_url(current)}; refusing to follow it (it would receive our credentials). "
            "Check the tenant's base_url and any proxy rewriting links",
            tenant=self.client.tenant.name,
        )

    def _repeated_link(self, current: httpx.URL, target: httpx.URL) -> ERPProtocolError:
        return ERPProtocolError(
            f"SAP sent the same next link twice while reading {safe_url(current)}; stopping instead "
            "of looping",
            tenant=self.client.tenant.name,
        )


def keyset_filter(keys: tuple[str, ...], after: tuple[str, ...]) -> str:
    """Rows whose key comes after ``after`` in key order: ``K1 gt 'a' or (K1 eq 'a' and K2 gt 'b')``."""
    terms = []
    for i, name in enumerate(keys):
        equal = [f"{k} eq {string_literal(v)}" for k, v in zip(keys[:i], after[:i], strict=True)]
        terms.append(" and ".join([*equal, f"{name} gt {string_literal(after[i])}"]))
    return terms[0] if len(terms) == 1 else " or ".join(f"({t})" for t in terms)
