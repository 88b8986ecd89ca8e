"""Pages, the REST admin (/api/v3/), its OpenAPI schema and docs, login, Django admin."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_not_required, login_required
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from dashboard.core.login_throttle import ThrottledAuthenticationForm
from dashboard.live import (
    brokers,
    clusters,
    group_actions,
    group_list,
    maintenance,
    messages,
    security,
    spark,
    tokens,
    topics,
    transactions,
)
from dashboard.live import views as live

urlpatterns = [
    path("", live.overview, name="overview"),
    path("account/token/", tokens.page, name="api-tokens"),
    path("account/token/create", tokens.create, name="api-token-create"),
    path("account/token/revoke", tokens.revoke, name="api-token-revoke"),
    path("clusters/", clusters.cluster_list, name="cluster-list"),
    path("clusters/switch", clusters.switch, name="cluster-switch"),
    path("clusters/<str:cluster_id>/", live.overview, name="cluster-overview"),
    path("clusters/<str:cluster_id>/settings/", clusters.cluster_settings, name="cluster-settings"),
    path(
        "clusters/<str:cluster_id>/settings/delete",
        clusters.cluster_delete,
        name="cluster-delete",
    ),
    path(
        "clusters/<str:cluster_id>/brokers/<int:broker_id>/",
        brokers.broker_page,
        name="broker-page",
    ),
    path(
        "clusters/<str:cluster_id>/brokers/<int:broker_id>/configs/",
        brokers.broker_configs,
        name="broker-configs",
    ),
    path("clusters/<str:cluster_id>/topics/", topics.topic_list, name="topic-list"),
    path("clusters/<str:cluster_id>/topics/create", topics.topic_create, name="topic-create"),
    path("clusters/<str:cluster_id>/topics/<str:topic_name>/", topics.topic, name="topic-page"),
    path(
        "clusters/<str:cluster_id>/topics/<str:topic_name>/delete",
        topics.topic_delete,
        name="topic-delete",
    ),
    path(
        "clusters/<str:cluster_id>/topics/<str:topic_name>/partitions",
        topics.add_partitions,
        name="topic-add-partitions",
    ),
    path(
        "clusters/<str:cluster_id>/topics/<str:topic_name>/configs/",
        topics.topic_configs,
        name="topic-configs",
    ),
    path(
        "clusters/<str:cluster_id>/topics/<str:topic_name>/messages/",
        messages.page,
        name="messages-page",
    ),
    path(
        "clusters/<str:cluster_id>/topics/<str:topic_name>/partitions/<int:partition_id>/segments/",
        live.segments,
        name="segments-page",
    ),
    path("clusters/<str:cluster_id>/security/", security.page, name="security-page"),
    path("clusters/<str:cluster_id>/security/acls/add", security.add_acl, name="security-acl-add"),
    path(
        "clusters/<str:cluster_id>/security/acls/remove",
        security.remove_acl,
        name="security-acl-remove",
    ),
    path(
        "clusters/<str:cluster_id>/security/users/set", security.set_user, name="security-user-set"
    ),
    path(
        "clusters/<str:cluster_id>/security/users/remove",
        security.remove_user,
        name="security-user-remove",
    ),
    path("clusters/<str:cluster_id>/transactions/", transactions.page, name="transactions-page"),
    path(
        "clusters/<str:cluster_id>/transactions/abort",
        transactions.abort,
        name="transactions-abort",
    ),
    path("clusters/<str:cluster_id>/groups/", group_list.group_list, name="group-list"),
    # Group ids may hold "/": the actions (no trailing slash) are tried before the page.
    path(
        "clusters/<str:cluster_id>/groups/<path:group_id>/actions/reset-offsets",
        group_actions.reset_offsets,
        name="group-reset-offsets",
    ),
    path(
        "clusters/<str:cluster_id>/groups/<path:group_id>/actions/delete-offsets",
        group_actions.delete_topic_offsets,
        name="group-delete-offsets",
    ),
    path(
        "clusters/<str:cluster_id>/groups/<path:group_id>/actions/delete",
        group_actions.delete_group,
        name="group-delete",
    ),
    path(
        "clusters/<str:cluster_id>/groups/<path:group_id>/", group_actions.group, name="group-page"
    ),
    path("clusters/<str:cluster_id>/maintenance/", maintenance.page, name="maintenance"),
    path("clusters/<str:cluster_id>/maintenance/run", maintenance.run_now, name="maintenance-run"),
    path(
        "clusters/<str:cluster_id>/maintenance/schedules",
        maintenance.schedule_save,
        name="schedule-create",
    ),
    path(
        "clusters/<str:cluster_id>/maintenance/schedules/<int:schedule_id>",
        maintenance.schedule_save,
        name="schedule-update",
    ),
    path(
        "clusters/<str:cluster_id>/maintenance/schedules/<int:schedule_id>/delete",
        maintenance.schedule_delete,
        name="schedule-delete",
    ),
    path("clusters/<str:cluster_id>/spark-loads/", spark.load_list, name="spark-loads"),
    path("clusters/<str:cluster_id>/spark-loads/launch", spark.launch, name="spark-load-launch"),
    path(
        "clusters/<str:cluster_id>/spark-loads/<int:load_id>/", spark.load_page, name="spark-load"
    ),
    path(
        "clusters/<str:cluster_id>/spark-loads/<int:load_id>/cancel",
        spark.cancel,
        name="spark-load-cancel",
    ),
    path(
        "login/",
        auth_views.LoginView.as_view(authentication_form=ThrottledAuthenticationForm),
        name="login",
    ),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("api/v3/", include(("dashboard.api.urls", "api"))),
    # Token clients read the schema too, so DRF (not the login redirect) checks the user.
    path("api/schema/", login_not_required(SpectacularAPIView.as_view()), name="schema"),
    # DRF marks its views login_not_required; the docs page is for people: send them to log in.
    path(
        "api/docs/",
        login_required(SpectacularSwaggerView.as_view(url_name="schema")),
        name="api-docs",
    ),
]
