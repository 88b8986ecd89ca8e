"""Django's admin site for users (admin role) and the platform's records."""

from django.contrib import admin

from .models import AuditLog, Cluster, MaintenanceRun, MaintenanceSchedule, SparkLoad


@admin.register(Cluster)
class ClusterAdmin(admin.ModelAdmin):
    list_display = ("name", "bootstrap_servers", "zookeeper_connect")


@admin.register(AuditLog)
class AuditLogAdmin(admin.ModelAdmin):
    list_display = ("timestamp", "username", "action", "target", "succeeded")
    list_filter = ("succeeded", "action")
    readonly_fields = [f.name for f in AuditLog._meta.fields]


admin.site.register(MaintenanceSchedule)
admin.site.register(MaintenanceRun)
admin.site.register(SparkLoad)
