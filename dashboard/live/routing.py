"""WebSocket routes of the live pages."""

from django.urls import path

from .consumers import SnapshotConsumer

websocket_urlpatterns = [
    path("ws/clusters/<str:cluster_id>/overview/", SnapshotConsumer.as_asgi()),
    path("ws/clusters/<str:cluster_id>/topics/<str:topic_name>/", SnapshotConsumer.as_asgi()),
]
