"""Each user's API token for the REST admin: created, replaced and revoked in the UI.

A token acts with its user's role (viewers read, operators change), so it is scoped by the
role, never beyond it. The key is shown once, on the page that creates it; afterwards only
when it was made and its first characters, so a shoulder or a screenshot cannot lift it.
Creating a token replaces the previous one (DRF keeps one per user); every change is
audited.
"""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST
from rest_framework.authtoken.models import Token

from dashboard.core import audit

SHOWN_PREFIX = 6


def page(request):
    token = Token.objects.filter(user=request.user).first()
    return render(
        request,
        "account/tokens.html",
        {
            "token": token,
            "prefix": token.key[:SHOWN_PREFIX] if token else "",
            "new_key": request.session.pop("new_api_token", None),
        },
    )


@require_POST
def create(request):
    replaced = Token.objects.filter(user=request.user).delete()[0] > 0
    token = Token.objects.create(user=request.user)
    # Carried to the next page load only: shown once, then gone from the session.
    request.session["new_api_token"] = token.key
    audit.record(
        request.user,
        "api_token.create",
        request.user.get_username(),
        details={"replaced": replaced},
        succeeded=True,
        result="ok",
    )
    messages.success(
        request,
        "New API token created; the previous one no longer works."
        if replaced
        else "API token created.",
    )
    return redirect("api-tokens")


@require_POST
def revoke(request):
    revoked = Token.objects.filter(user=request.user).delete()[0] > 0
    audit.record(
        request.user,
        "api_token.revoke",
        request.user.get_username(),
        succeeded=revoked,
        result="ok" if revoked else "no token",
    )
    if revoked:
        messages.success(request, "API token revoked: requests with it are refused now.")
    else:
        messages.info(request, "You have no API token to revoke.")
    return redirect("api-tokens")
