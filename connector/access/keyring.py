"""The configured tokens, with their secrets from the environment, and checking a presented one.

Every presented token is compared with every configured secret (revoked ones too) with
``hmac.compare_digest`` over SHA-256 digests, without stopping at a match: how long a check takes
says nothing about which token matched or how much of one. A revoked or unknown token gets the
same answer (None). The old single ``mcp.token_env`` token stays valid as a token named ``mcp``
with the ``erase`` role, unless ``access.tokens`` names one ``mcp`` itself.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

from connector.access.principal import Principal
from connector.errors import ConfigError
from connector.ids import canonical_id
from connector.settings import Settings, TokenSettings, environment_value

MIN_SECRET_LENGTH = 16
LEGACY_NAME = "mcp"


@dataclass(frozen=True, slots=True)
class _Entry:
    principal: Principal
    digest: bytes  # SHA-256 of the secret
    revoked: bool


def _digest(secret: str) -> bytes:
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).digest()


def _principal(token: TokenSettings) -> Principal:
    return Principal(
        name=token.name,
        role=token.role,
        tenants=None if token.tenants is None else frozenset(token.tenants),
        customers=None if token.customers is None else frozenset(canonical_id(c) for c in token.customers),
    )


class Keyring:
    """The tokens of one settings, read once; :meth:`authenticate` checks a presented secret."""

    def __init__(self, entries: list[_Entry], problems: list[str], legacy_env: str) -> None:
        self._entries = entries
        self.problems = problems  # configured, not revoked, but without a usable secret
        self._legacy_env = legacy_env

    @classmethod
    def from_settings(cls, settings: Settings) -> Keyring:
        entries: list[_Entry] = []
        problems: list[str] = []
        tokens = list(settings.access.tokens)
        if all(t.name != LEGACY_NAME for t in tokens):
            legacy = environment_value(settings.mcp.token_env)
            if legacy:  # set: the pre-access single token, with every right it had
                old = TokenSettings(name=LEGACY_NAME, secret_env=settings.mcp.token_env, role="erase")
                tokens.append(old)
        for token in tokens:
            secret = environment_value(token.secret_env)
            if not secret or len(secret) < MIN_SECRET_LENGTH:
                if not token.revoked:
                    problems.append(
                        f"token {token.name!r} needs a secret of at least {MIN_SECRET_LENGTH} characters "
                        f"in ${token.secret_env}"
                    )
                continue
            entries.append(_Entry(_principal(token), _digest(secret), token.revoked))
        return cls(entries, problems, settings.mcp.token_env)

    @property
    def usable(self) -> int:
        """How many tokens can sign in (configured, with a secret, not revoked)."""
        return sum(not e.revoked for e in self._entries)

    def authenticate(self, presented: str | None) -> Principal | None:
        """The principal of ``presented``, or None (missing, unknown or revoked)."""
        offered = _digest(presented or "")
        found: _Entry | None = None
        for entry in self._entries:  # no early exit: every secret is compared
            if hmac.compare_digest(offered, entry.digest):
                found = entry
        if found is None or found.revoked or not presented:
            return None
        return found.principal

    def require_usable(self) -> None:
        """ConfigError when serving over HTTP would admit nobody or a token lacks its secret."""
        if self.problems:
            raise ConfigError(self.problems[0])
        if not self.usable:
            raise ConfigError(
                f"mcp over HTTP needs a bearer token of at least {MIN_SECRET_LENGTH} characters in "
                f"${self._legacy_env} or in access.tokens (or --no-auth on a loopback address)"
            )


def authenticate(settings: Settings, presented: str | None) -> Principal | None:
    """The principal a presented secret stands for, or None (refused: unknown, revoked, missing)."""
    return Keyring.from_settings(settings).authenticate(presented)


def bearer_secret(header: str | bytes | None) -> str | None:
    """The secret of an ``Authorization: Bearer <secret>`` header value, or None."""
    if header is None:
        return None
    text = header.decode("latin-1") if isinstance(header, bytes) else header
    scheme, _, secret = text.partition(" ")
    if scheme.lower() != "bearer" or not secret.strip():
        return None
    return secret.strip()
