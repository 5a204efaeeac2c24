"""Sign in with a named token (kept in an HttpOnly, same-site cookie), and sign out."""

from __future__ import annotations

from starlette.responses import Response

from connector.console.web import COOKIE, View, login_page, redirect, safe_next


def login(view: View) -> Response:
    if view.form is None:
        return login_page(view.request)
    token = view.value("token")
    target = safe_next(view.value("next"))
    if token is None or view.console.keyring.authenticate(token) is None:
        return login_page(view.request, status=401, message="unknown or revoked token")
    response = redirect(target)
    response.set_cookie(
        COOKIE, token, httponly=True, samesite="strict", secure=view.request.url.scheme == "https", path="/"
    )
    return response


def logout(view: View) -> Response:
    response = redirect("/")
    response.delete_cookie(COOKIE, path="/")
    return response
