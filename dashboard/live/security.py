"""A cluster's security page: its ACLs and SCRAM users, with operators' forms to add and
remove them (the same Admin calls as REST's /acls and /users).

As on the other pages, a refusal renders the page again with the error beside its form and
what was typed (HTTP 400; never the password), a success redirects with a message, and
every change needs the operator role and is audited. A cluster without an authorizer says
so in Kafka's words instead of listing ACLs.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import permission_required
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from brokerd.client.errors import KafkaClientError
from brokerd.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from brokerd.security.sasl.scram import MAX_ITERATIONS, MECHANISMS, MIN_ITERATIONS
from dashboard.core import audit
from dashboard.core.kafka import error_text, with_cluster
from dashboard.core.models import Cluster
from dashboard.core.roles import OPERATE_PERMISSION, VIEW_PERMISSION

RESOURCE_TYPES = ["TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID", "DELEGATION_TOKEN"]
OPERATIONS = [o.name for o in AclOperation if o.name not in ("UNKNOWN", "ANY")]
ACL_FIELDS = ("resource_type", "resource_name", "pattern_type", "principal", "host",
              "operation", "permission")  # fmt: skip
FIELD_MAX = 1000


class FormError(ValueError):
    pass


def _binding(form: dict[str, str]) -> AclBinding:
    try:
        resource_type = ResourceType[form["resource_type"]]
        pattern_type = PatternType[form["pattern_type"] or "LITERAL"]
        operation = AclOperation[form["operation"]]
        permission = AclPermissionType[form["permission"]]
    except KeyError as exc:
        raise FormError(f"choose a value for {exc.args[0]!s}") from None
    if resource_type.name not in RESOURCE_TYPES or pattern_type.name not in ("LITERAL", "PREFIXED"):
        raise FormError("choose a resource type and a pattern type from the lists")
    name = form["resource_name"].strip() or (
        "kafka-cluster" if resource_type.name == "CLUSTER" else ""
    )
    if not name:
        raise FormError("give the resource's name (or * for every one)")
    principal = form["principal"].strip()
    if ":" not in principal.strip(":"):
        raise FormError("a principal is Type:name, e.g. User:alice")
    return AclBinding(
        ResourcePattern(resource_type, name, pattern_type),
        AccessControlEntry(principal, form["host"].strip() or "*", operation, permission),
    )


def _security_state(cluster: Cluster) -> dict:
    async def read(ops):
        state: dict = {"acls": [], "acl_error": None, "users": {}, "user_error": None}
        try:
            state["acls"] = await ops.admin.describe_acls(AclBindingFilter())
        except KafkaClientError as exc:
            state["acl_error"] = error_text(exc)
        try:
            state["users"] = await ops.admin.describe_user_scram_credentials()
        except KafkaClientError as exc:
            state["user_error"] = error_text(exc)
        return state

    return with_cluster(cluster, read)


def _render(request, cluster: Cluster, status: int = 200, **forms):
    try:
        state = _security_state(cluster)
    except KafkaClientError as exc:
        state = {"acls": [], "users": {}, "acl_error": error_text(exc), "user_error": None}
    acls = sorted(
        state["acls"],
        key=lambda b: (b.pattern.resource_type.name, b.pattern.name, b.entry.principal,
                       b.entry.operation.name),
    )  # fmt: skip
    return render(
        request,
        "live/security.html",
        {
            "cluster": cluster,
            "acls": acls,
            "acl_error": state["acl_error"],
            "users": sorted(state["users"].items()),
            "user_error": state["user_error"],
            "resource_types": RESOURCE_TYPES,
            "operations": OPERATIONS,
            "mechanisms": sorted(MECHANISMS),
            "acl": forms.pop("acl", None) or {"pattern_type": "LITERAL", "host": "*"},
            # Not "user": that name is the logged-in user the page header reads.
            "scram_form": forms.pop("scram_form", None) or {"iterations": "8192"},
            **forms,
        },
        status=status,
    )


@permission_required(VIEW_PERMISSION, raise_exception=True)
def page(request, cluster_id: str):
    return _render(request, get_object_or_404(Cluster, name=cluster_id))


def _form(request, fields) -> dict[str, str]:
    return {k: request.POST.get(k, "")[:FIELD_MAX] for k in fields}


def _audit(request, cluster, action, target, details, error):
    audit.record(request.user, action, target, cluster=cluster, details=details,
                 succeeded=error is None, result=error or "ok")  # fmt: skip


@require_POST
@permission_required(OPERATE_PERMISSION, raise_exception=True)
def add_acl(request, cluster_id: str):
    cluster = get_object_or_404(Cluster, name=cluster_id)
    form = _form(request, ACL_FIELDS)
    try:
        binding = _binding(form)
    except FormError as exc:
        return _render(request, cluster, 400, acl=form, acl_form_error=str(exc))
    target = f"{binding.pattern.resource_type.name}:{binding.pattern.name}"
    try:
        with_cluster(cluster, lambda ops: ops.admin.create_acls([binding]))
    except KafkaClientError as exc:
        _audit(request, cluster, "acl.create", target, form, error_text(exc))
        return _render(request, cluster, 400, acl=form, acl_form_error=error_text(exc))
    _audit(request, cluster, "acl.create", target, form, None)
    messages.success(request, f"ACL added: {form['permission']} {binding.entry.principal} "
                              f"{form['operation']} on {target}.")  # fmt: skip
    return redirect("security-page", cluster.name)


@require_POST
@permission_required(OPERATE_PERMISSION, raise_exception=True)
def remove_acl(request, cluster_id: str):
    """Removes exactly the one ACL of the row: a filter naming every field."""
    cluster = get_object_or_404(Cluster, name=cluster_id)
    form = _form(request, ACL_FIELDS)
    try:
        binding = _binding(form)
    except FormError as exc:
        return _render(request, cluster, 400, acl_error_row=str(exc))
    exact = AclBindingFilter(
        binding.pattern.resource_type, binding.pattern.name, binding.pattern.pattern_type,
        binding.entry.principal, binding.entry.host, binding.entry.operation,
        binding.entry.permission_type,
    )  # fmt: skip
    target = f"{binding.pattern.resource_type.name}:{binding.pattern.name}"
    try:
        (removed,) = with_cluster(cluster, lambda ops: ops.admin.delete_acls([exact]))
    except KafkaClientError as exc:
        _audit(request, cluster, "acl.delete", target, form, error_text(exc))
        return _render(request, cluster, 400, acl_form_error=error_text(exc))
    _audit(request, cluster, "acl.delete", target, form, None)
    messages.success(request, f"ACL removed ({len(removed)})." if removed else "Nothing matched.")
    return redirect("security-page", cluster.name)


@require_POST
@permission_required(OPERATE_PERMISSION, raise_exception=True)
def set_user(request, cluster_id: str):
    cluster = get_object_or_404(Cluster, name=cluster_id)
    form = _form(request, ("user_name", "mechanism", "iterations"))
    password = request.POST.get("password", "")
    name = form["user_name"].strip()
    try:
        iterations = int(form["iterations"] or 8192)
    except ValueError:
        iterations = -1
    error = None
    if not name or len(name) > 256:
        error = "give the user's name (at most 256 characters)"
    elif form["mechanism"] not in MECHANISMS:
        error = f"choose a mechanism: {', '.join(sorted(MECHANISMS))}"
    elif not password or len(password) > 1024:
        error = "give a password (at most 1024 characters)"
    elif not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
        error = f"iterations are between {MIN_ITERATIONS} and {MAX_ITERATIONS}"
    if error:
        return _render(request, cluster, 400, scram_form=form, user_form_error=error)
    details = {"mechanism": form["mechanism"], "iterations": iterations}
    try:
        with_cluster(
            cluster,
            lambda ops: ops.admin.upsert_user_scram_credential(
                name, form["mechanism"], password, iterations
            ),
        )
    except KafkaClientError as exc:
        _audit(request, cluster, "user.upsert", name, details, error_text(exc))
        return _render(request, cluster, 400, scram_form=form, user_form_error=error_text(exc))
    _audit(request, cluster, "user.upsert", name, details, None)
    messages.success(request, f"{form['mechanism']} credential of {name} saved.")
    return redirect("security-page", cluster.name)


@require_POST
@permission_required(OPERATE_PERMISSION, raise_exception=True)
def remove_user(request, cluster_id: str):
    cluster = get_object_or_404(Cluster, name=cluster_id)
    form = _form(request, ("user_name", "mechanism"))
    if form["mechanism"] not in MECHANISMS:
        return _render(request, cluster, 400, user_form_error="choose a mechanism")
    try:
        with_cluster(
            cluster,
            lambda ops: ops.admin.delete_user_scram_credential(
                form["user_name"], form["mechanism"]
            ),
        )
    except KafkaClientError as exc:
        _audit(request, cluster, "user.delete", form["user_name"], form, error_text(exc))
        return _render(request, cluster, 400, user_form_error=error_text(exc))
    _audit(request, cluster, "user.delete", form["user_name"], form, None)
    messages.success(request, f"{form['mechanism']} credential of {form['user_name']} removed.")
    return redirect("security-page", cluster.name)
