"""Logging in to an ERP: one flow object per ERP (and auth kind), modelled on httpx's ``Auth``.

An ``httpx.Auth`` hands the client each request through an ``auth_flow`` generator that can send
it, look at the answer and send it again after renewing a credential. Ours does that job one level
up, in :class:`~connector.adapters.http.HttpClient`, which owns retries, rate limits, counting and
the error table, so a login or token request is retried and counted like any other:

- :meth:`LoginFlow.login` when the adapter opens (a session cookie, a token, or nothing for static
  credentials);
- :meth:`LoginFlow.auth_flow` around every request: it renews what is about to expire
  (:meth:`before_request`), yields for the client to send, and, if the answer was a 401 and the
  flow :attr:`refreshes`, is resumed once to log in again (:meth:`refresh`) and yields for the one
  retry. A second 401 stands;
- :meth:`LoginFlow.logout` when the adapter closes. It never raises: it runs on the way out of an
  error, and that error must win.

Login and logout requests themselves are sent with ``reauth=False``, outside any flow.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from connector.adapters.http import HttpClient

log = logging.getLogger(__name__)


class LoginFlow(ABC):
    """How one tenant logs in, renews its credential after a 401, and logs out."""

    #: Whether logging in again can cure a 401 (a session or token), or it means wrong credentials.
    refreshes: bool = True

    @abstractmethod
    def login(self, http: HttpClient) -> None:
        """Obtain the session or token before the first request."""

    @abstractmethod
    def refresh(self, http: HttpClient) -> None:
        """Renew the session or token after a 401 (called at most once per request)."""

    def before_request(self, http: HttpClient) -> None:
        """Renew a credential that is about to expire, before it earns a 401."""
        return None

    def logout(self, http: HttpClient) -> None:
        """End the session; never raises."""
        return None

    def session_state(self, http: HttpClient) -> str | None:
        """The live session as text another process can end with :meth:`close_session` (None: none)."""
        return None

    def close_session(self, http: HttpClient, state: str) -> None:
        """End a session an earlier process left open (its :meth:`session_state`); never raises."""
        return None

    def auth_flow(self, http: HttpClient) -> Iterator[None]:
        """One request: yield to send it; resumed after a 401, refresh once and yield to resend."""
        self.before_request(http)
        yield
        if self.refreshes:
            log.info("%s session expired (401); logging in again and retrying once", http.erp)
            self.refresh(http)
            yield
