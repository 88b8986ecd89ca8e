"""WebSocket routes of the live pages."""

from django.urls import path

from .consumers import (
    MaintenanceConsumer,
    MessagesTailConsumer,
    SnapshotConsumer,
    SparkLoadConsumer,
    SparkLoadsConsumer,
)

C = "ws/clusters/<str:cluster_id>"

websocket_urlpatterns = [
    path(f"{C}/overview/", SnapshotConsumer.as_asgi()),
    path(f"{C}/topics/<str:topic_name>/", SnapshotConsumer.as_asgi()),
    path(f"{C}/topics/<str:topic_name>/messages/", MessagesTailConsumer.as_asgi()),
    path(
        f"{C}/topics/<str:topic_name>/partitions/<int:partition_id>/segments/",
        SnapshotConsumer.as_asgi(),
    ),
    path(f"{C}/groups/<path:group_id>/", SnapshotConsumer.as_asgi()),
    path(f"{C}/maintenance/", MaintenanceConsumer.as_asgi()),
    path(f"{C}/spark-loads/", SparkLoadsConsumer.as_asgi()),
    path(f"{C}/spark-loads/<int:load_id>/", SparkLoadConsumer.as_asgi()),
]
