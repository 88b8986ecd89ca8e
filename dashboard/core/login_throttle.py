"""Failed sign-ins slow down whoever makes them: after LOGIN_THROTTLE_FREE_FAILURES failures
for one user name from one address, each further attempt waits a delay that doubles with
every failure (LOGIN_THROTTLE_BASE_DELAY_S, capped at LOGIN_THROTTLE_MAX_DELAY_S).

The check sits in the authentication backend, so the login page, the Django admin's login
and anything else that calls authenticate() are throttled alike. Counts live in Django's
cache (the web process's memory by default: daphne is one process). During a delay the
password is not even checked, and the answer does not say whether it was right.
"""

from __future__ import annotations

import time

from django import forms
from django.conf import settings
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.forms import AuthenticationForm
from django.core.cache import cache


def _setting(name: str, default: float) -> float:
    return getattr(settings, name, default)


def client_address(request) -> str:
    # REMOTE_ADDR only: a forwarded-for header is the client's to forge.
    return (request.META.get("REMOTE_ADDR") if request is not None else None) or "-"


def _key(username: str | None, address: str) -> str:
    return f"login-failures:{(username or '').casefold()}:{address}"


def wait_seconds(username: str | None, address: str) -> float:
    """How long until `username` may try again from `address` (0: now)."""
    state = cache.get(_key(username, address))
    if not state:
        return 0.0
    failures, last_failure = state
    free = int(_setting("LOGIN_THROTTLE_FREE_FAILURES", 5))
    if failures < free:
        return 0.0
    delay = min(
        _setting("LOGIN_THROTTLE_BASE_DELAY_S", 1.0) * 2 ** (failures - free),
        _setting("LOGIN_THROTTLE_MAX_DELAY_S", 900.0),
    )
    return max(0.0, last_failure + delay - time.time())


def record_failure(username: str | None, address: str) -> None:
    key = _key(username, address)
    failures, _ = cache.get(key) or (0, 0.0)
    keep = int(_setting("LOGIN_THROTTLE_MAX_DELAY_S", 900.0)) * 2
    cache.set(key, (failures + 1, time.time()), timeout=keep)


def clear(username: str | None, address: str) -> None:
    cache.delete(_key(username, address))


class ThrottledModelBackend(ModelBackend):
    def authenticate(self, request, username=None, password=None, **kwargs):
        address = client_address(request)
        if wait_seconds(username, address) > 0:
            return None  # refused unchecked; not counted, so waiting out the delay works
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if user is None:
            record_failure(username, address)
        else:
            clear(username, address)
        return user


class ThrottledAuthenticationForm(AuthenticationForm):
    """The login page's form: says how long to wait instead of 'wrong password'."""

    error_messages = {
        **AuthenticationForm.error_messages,
        "invalid_login": "Wrong username or password.",
    }

    def clean(self):
        username = self.cleaned_data.get("username")
        wait = wait_seconds(username, client_address(self.request))
        if wait > 0:
            raise forms.ValidationError(
                "Too many failed sign-ins for this user from your address. "
                f"Try again in {int(wait) + 1} s.",
                code="throttled",
            )
        return super().clean()
