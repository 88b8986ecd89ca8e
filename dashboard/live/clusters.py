"""Clusters in the UI: the list of the clusters the platform watches, registering one,
editing its connection settings, removing it, and switching between them (the header's
cluster menu, `switch`).

What `manage.py register_cluster` takes, as a form: name, bootstrap servers, ZooKeeper, admin
endpoints and the admin token's reference, and the client security settings (protocol, SASL
mechanism, user and password, TLS CA, client certificate and key, hostname check), or a
Kafka client .properties pasted whole. The SASL password and the private key are stored
sealed (cluster_secrets.py) and never rendered back, not even after a refused form (the form
says to type them again); left empty on an edit, the stored ones are kept. A refusal renders
the form again (HTTP 400) with the errors beside it and everything else that was typed.
Changes need the operator role and are audited; removing a cluster asks for its name.
"""

from __future__ import annotations

import json

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import permission_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import NoReverseMatch, reverse
from django.views.decorators.http import require_POST

from brokerd.config.properties import parse_properties
from dashboard.core import audit
from dashboard.core.client_properties import ClientPropertiesError, read_client_properties
from dashboard.core.models import (
    Cluster,
    SaslMechanism,
    SecurityProtocol,
    cluster_name_validator,
)
from dashboard.core.roles import OPERATE_PERMISSION, VIEW_PERMISSION

MAX_PEM = 64_000
MAX_PROPERTIES = 64_000
SECRET_FIELDS = ("sasl_password", "ssl_key_pem")
# The .properties keys that name a file: read by `register_cluster` on the operator's own
# machine, never from a form (a path typed into a web page must not read the server's files).
FILE_KEYS = {
    "ssl.truststore.location",
    "ssl.keystore.location",
    "ssl.ca.location",
    "ssl.certificate.location",
    "ssl.key.location",
}


class ClusterForm(forms.Form):
    name = forms.CharField(
        label="Name",
        max_length=100,
        validators=[cluster_name_validator],
        help_text="letters, digits, '.', '_' and '-': the cluster's id in URLs",
    )
    bootstrap_servers = forms.CharField(
        label="Bootstrap servers",
        max_length=1000,
        help_text="host:port[,host:port...] of the Kafka listeners",
    )
    zookeeper_connect = forms.CharField(
        label="ZooKeeper connect",
        max_length=1000,
        required=False,
        help_text="host:port[,...][/chroot] (optional)",
    )
    admin_endpoints = forms.CharField(
        label="Admin API endpoints",
        required=False,
        max_length=10_000,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text='JSON, broker id -> admin API URL: {"1": "http://10.0.0.1:9644"}; '
        "empty: found in ZooKeeper",
    )
    admin_token_ref = forms.CharField(
        label="Admin token reference",
        max_length=1000,
        required=False,
        help_text="env:BROKERD_NAME or file:/path in the secrets directory (never the token)",
    )
    client_properties = forms.CharField(
        label="Client .properties",
        required=False,
        max_length=MAX_PROPERTIES,
        widget=forms.Textarea(attrs={"rows": 4}),
        help_text="optional: a Kafka client .properties (security.protocol, sasl.mechanism, "
        "sasl.jaas.config, ssl.truststore.certificates, ssl.keystore.key, ... with the PEM "
        "inline) instead of the fields below",
    )
    security_protocol = forms.ChoiceField(
        label="security.protocol", choices=[(v, v) for v in SecurityProtocol.values]
    )
    sasl_mechanism = forms.ChoiceField(
        label="sasl.mechanism",
        choices=[("", "none")] + [(v, v) for v in SaslMechanism.values],
        required=False,
    )
    sasl_username = forms.CharField(label="SASL user", max_length=256, required=False)
    sasl_password = forms.CharField(
        label="SASL password",
        max_length=1000,
        required=False,
        strip=False,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
    )
    ssl_ca_pem = forms.CharField(
        label="CA certificates (PEM)",
        required=False,
        max_length=MAX_PEM,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="the CA certificates (PEM) the brokers' certificates chain to; "
        "empty: the system's",
    )
    ssl_certificate_pem = forms.CharField(
        label="Client certificate (PEM)",
        required=False,
        max_length=MAX_PEM,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="a client certificate (PEM) for mutual TLS",
    )
    ssl_key_pem = forms.CharField(
        label="Client private key (PEM)",
        required=False,
        max_length=MAX_PEM,
        strip=False,
        # A textarea never filled back: a key is a secret.
        widget=forms.Textarea(attrs={"rows": 3, "autocomplete": "off"}),
        help_text="the client certificate's private key (PEM, unencrypted)",
    )
    ssl_check_hostname = forms.BooleanField(
        label="Check the brokers' host names",
        required=False,
        initial=True,
        help_text="ssl.endpoint.identification.algorithm=https (Kafka's default)",
    )

    def __init__(self, *args, instance: Cluster | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.instance = instance
        self.secrets_typed = False
        if instance is not None:
            self.fields["sasl_password"].help_text = (
                "stored (never shown): leave empty to keep it"
                if instance.sasl_password_sealed
                else ""
            )
            self.fields["ssl_key_pem"].help_text = (
                "stored (never shown): leave empty to keep it" if instance.ssl_key_sealed else ""
            )

    def clean_admin_endpoints(self) -> dict:
        text = self.cleaned_data["admin_endpoints"].strip()
        if not text:
            return {}
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise forms.ValidationError(f"not JSON: {exc}") from None
        if not isinstance(value, dict) or not all(
            isinstance(k, str) and k.isdigit() and isinstance(v, str) for k, v in value.items()
        ):
            raise forms.ValidationError('a JSON object of broker id -> URL: {"1": "http://..."}')
        return value

    def clean(self):
        data = super().clean()
        self.secrets_typed = any(self.data.get(f) for f in SECRET_FIELDS)
        return data

    def initial_for(self, cluster: Cluster) -> dict:
        return {
            "name": cluster.name,
            "bootstrap_servers": cluster.bootstrap_servers,
            "zookeeper_connect": cluster.zookeeper_connect,
            "admin_endpoints": json.dumps(cluster.admin_endpoints)
            if cluster.admin_endpoints
            else "",
            "admin_token_ref": cluster.admin_token_ref,
            "security_protocol": cluster.security_protocol,
            "sasl_mechanism": cluster.sasl_mechanism,
            "sasl_username": cluster.sasl_username,
            "ssl_ca_pem": cluster.ssl_ca_pem,
            "ssl_certificate_pem": cluster.ssl_certificate_pem,
            "ssl_check_hostname": cluster.ssl_check_hostname,
        }


def apply_form(form: ClusterForm, cluster: Cluster) -> None:
    """The form's values on the cluster (not saved). Secrets left empty keep the stored
    ones; settings the chosen protocol does not use are cleared. ValidationError (with the
    field) for what the model or the .properties refuse."""
    data = form.cleaned_data
    cluster.name = data["name"]
    cluster.bootstrap_servers = data["bootstrap_servers"].strip()
    cluster.zookeeper_connect = data["zookeeper_connect"].strip()
    cluster.admin_endpoints = data["admin_endpoints"]
    cluster.admin_token_ref = data["admin_token_ref"].strip()
    if data["client_properties"].strip():
        files = sorted(
            k
            for k in parse_properties(data["client_properties"])
            if k in FILE_KEYS or k.endswith(".location")
        )
        if files:
            raise ValidationError(
                {
                    "client_properties": f"{', '.join(files)}: a form does not read files on "
                    "the platform's server; paste the PEM instead (ssl.truststore.certificates, "
                    "ssl.keystore.certificate.chain, ssl.keystore.key) or use the fields below"
                }
            )
        try:
            read_client_properties(data["client_properties"]).apply_to(cluster)
        except ClientPropertiesError as exc:
            raise ValidationError({"client_properties": str(exc)}) from None
    else:
        protocol = data["security_protocol"]
        sasl = protocol.startswith("SASL_")
        tls = protocol in (SecurityProtocol.SSL, SecurityProtocol.SASL_SSL)
        cluster.security_protocol = protocol
        cluster.sasl_mechanism = data["sasl_mechanism"] if sasl else ""
        cluster.sasl_username = data["sasl_username"].strip() if sasl else ""
        if not sasl:
            cluster.set_sasl_password("")
        elif data["sasl_password"]:
            cluster.set_sasl_password(data["sasl_password"])
        cluster.ssl_ca_pem = data["ssl_ca_pem"].strip() if tls else ""
        cluster.ssl_certificate_pem = data["ssl_certificate_pem"].strip() if tls else ""
        if not tls:
            cluster.set_ssl_key("")
        elif data["ssl_key_pem"].strip():
            cluster.set_ssl_key(data["ssl_key_pem"].strip())
        cluster.ssl_check_hostname = data["ssl_check_hostname"]
        if tls and (cluster.ssl_ca_pem or cluster.ssl_certificate_pem or cluster.ssl_key_sealed):
            try:
                cluster._ssl_context()  # a PEM that does not load is refused now, not later
            except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError
                raise ValidationError(
                    {"ssl_ca_pem": f"the certificates or the key do not load: {exc}"}
                ) from None
    cluster.full_clean()


def _field_errors(form: ClusterForm, exc: ValidationError) -> None:
    """A model's ValidationError beside the form's fields (the rest above the form)."""
    if hasattr(exc, "error_dict"):
        for field, errors in exc.message_dict.items():
            form.add_error(field if field in form.fields else None, errors)
    else:
        form.add_error(None, exc.messages)


def _details(cluster: Cluster) -> dict:
    """What the audit log keeps of a registration: never a secret."""
    return {
        "bootstrap_servers": cluster.bootstrap_servers,
        "zookeeper_connect": cluster.zookeeper_connect,
        "security_protocol": cluster.security_protocol,
        "sasl_mechanism": cluster.sasl_mechanism,
        "sasl_username": cluster.sasl_username,
    }


def _render_list(request, form: ClusterForm | None = None, status: int = 200):
    return render(
        request,
        "live/clusters.html",
        {
            "clusters": Cluster.objects.all(),
            "form": form or ClusterForm(initial={"security_protocol": "PLAINTEXT"}),
        },
        status=status,
    )


@permission_required(VIEW_PERMISSION, raise_exception=True)
def cluster_list(request):
    """Every cluster the platform watches; for operators, a form to register one."""
    if request.method != "POST":
        return _render_list(request)
    if not request.user.has_perm(OPERATE_PERMISSION):
        raise PermissionDenied("registering a cluster needs the operator role")
    form = ClusterForm(request.POST)
    if not form.is_valid():
        return _render_list(request, form, 400)
    cluster = Cluster()
    try:
        apply_form(form, cluster)
    except ValidationError as exc:
        _field_errors(form, exc)
        return _render_list(request, form, 400)
    cluster.save()
    audit.record(request.user, "cluster.register", cluster.name, cluster=cluster,
                 details=_details(cluster), succeeded=True, result="ok")  # fmt: skip
    messages.success(request, f"Cluster {cluster.name} registered.")
    return redirect("cluster-overview", cluster.name)


def _render_settings(request, cluster: Cluster, form=None, delete_error=None, status=200):
    return render(
        request,
        "live/cluster_settings.html",
        {
            "cluster": cluster,
            "form": form
            or ClusterForm(initial=ClusterForm().initial_for(cluster), instance=cluster),
            "has_password": bool(cluster.sasl_password_sealed),
            "has_key": bool(cluster.ssl_key_sealed),
            "delete_error": delete_error,
        },
        status=status,
    )


@permission_required(VIEW_PERMISSION, raise_exception=True)
def cluster_settings(request, cluster_id: str):
    """A cluster's connection settings; operators change them here."""
    cluster = get_object_or_404(Cluster, name=cluster_id)
    if request.method != "POST":
        return _render_settings(request, cluster)
    if not request.user.has_perm(OPERATE_PERMISSION):
        raise PermissionDenied("changing a cluster needs the operator role")
    form = ClusterForm(request.POST, instance=cluster)
    if not form.is_valid():
        return _render_settings(request, cluster, form, status=400)
    edited = get_object_or_404(Cluster, pk=cluster.pk)  # the page shows the stored one
    try:
        apply_form(form, edited)
    except ValidationError as exc:
        _field_errors(form, exc)
        return _render_settings(request, cluster, form, status=400)
    edited.save()
    audit.record(request.user, "cluster.update", edited.name, cluster=edited,
                 details=_details(edited), succeeded=True, result="ok")  # fmt: skip
    messages.success(request, f"Cluster {edited.name} saved.")
    return redirect("cluster-settings", edited.name)


@require_POST
@permission_required(OPERATE_PERMISSION, raise_exception=True)
def cluster_delete(request, cluster_id: str):
    """Stops watching the cluster (its schedules, runs and history go with it) once its
    name is typed; the cluster itself is not touched."""
    cluster = get_object_or_404(Cluster, name=cluster_id)
    typed = request.POST.get("confirm", "")[:200].strip()
    if typed != cluster.name:
        error = f"type the cluster's name, {cluster.name}, to remove it"
        return _render_settings(request, cluster, delete_error=error, status=400)
    name = cluster.name
    audit.record(request.user, "cluster.remove", name, details=_details(cluster),
                 succeeded=True, result="ok")  # fmt: skip
    cluster.delete()
    messages.success(
        request, f"Cluster {name} removed from the platform (the cluster itself is untouched)."
    )
    return redirect("cluster-list")


# Pages that exist for every cluster: switching keeps the page, anything deeper (a topic, a
# group) goes to the other cluster's overview.
SWITCHABLE = {
    "cluster-overview",
    "topic-list",
    "group-list",
    "transactions-page",
    "maintenance",
    "spark-loads",
    "security-page",
    "cluster-settings",
}


@permission_required(VIEW_PERMISSION, raise_exception=True)
def switch(request):
    """The header's cluster menu: the same page of another cluster."""
    cluster = get_object_or_404(Cluster, name=request.GET.get("to", "")[:100])
    page = request.GET.get("page", "")
    if page not in SWITCHABLE:
        page = "cluster-overview"
    try:
        return redirect(reverse(page, args=[cluster.name]))
    except NoReverseMatch:
        return redirect("cluster-overview", cluster.name)
