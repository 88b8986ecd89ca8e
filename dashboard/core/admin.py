"""Django's admin site for users (admin role) and the platform's records."""

from django import forms
from django.contrib import admin

from .models import AuditLog, Cluster, MaintenanceRun, MaintenanceSchedule, SparkLoad


class ClusterForm(forms.ModelForm):
    """The SASL password and the TLS private key are written here, never shown back: an
    empty field keeps what is stored."""

    sasl_password = forms.CharField(
        required=False,
        widget=forms.PasswordInput(render_value=False),
        help_text="stored encrypted; leave empty to keep the stored one",
    )
    ssl_private_key_pem = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 4}),
        label="SSL private key (PEM)",
        help_text="for mutual TLS; stored encrypted; leave empty to keep the stored one",
    )

    class Meta:
        model = Cluster
        fields = "__all__"

    def _post_clean(self) -> None:
        # Sealed before the model's own validation, which requires the password for SASL.
        if password := self.cleaned_data.get("sasl_password"):
            self.instance.set_sasl_password(password)
        if key := self.cleaned_data.get("ssl_private_key_pem"):
            self.instance.set_ssl_key(key)
        super()._post_clean()


@admin.register(Cluster)
class ClusterAdmin(admin.ModelAdmin):
    form = ClusterForm
    list_display = ("name", "bootstrap_servers", "security_protocol", "zookeeper_connect")


@admin.register(AuditLog)
class AuditLogAdmin(admin.ModelAdmin):
    list_display = ("timestamp", "username", "action", "target", "succeeded")
    list_filter = ("succeeded", "action")
    readonly_fields = [f.name for f in AuditLog._meta.fields]


admin.site.register(MaintenanceSchedule)
admin.site.register(MaintenanceRun)
admin.site.register(SparkLoad)
