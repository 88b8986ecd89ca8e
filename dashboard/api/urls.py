"""/api/v3/ routes in REST Proxy v3's layout."""

from django.urls import path

from . import views_acls as acls
from . import views_clusters as clusters
from . import views_groups as groups
from . import views_maintenance as maintenance
from . import views_partition_moves as moves
from . import views_partitions as partitions
from . import views_records as records
from . import views_spark as spark
from . import views_topics as topics
from . import views_transactions as transactions
from . import views_users as users

C = "clusters/<str:cluster_id>"
T = f"{C}/topics/<str:topic_name>"
P = f"{T}/partitions/<int:partition_id>"
# Kafka allows "/" (and anything else) in group ids: `path` takes them, percent-encoded or not
# (the server decodes %2F before routing), so a group's sub-resources are tried before it.
G = f"{C}/consumer-groups/<path:group_id>"
L = f"{C}/spark-loads/<int:load_id>"

urlpatterns = [
    path("clusters", clusters.ClusterList.as_view(), name="clusters"),
    path(C, clusters.ClusterDetail.as_view(), name="cluster"),
    path(f"{C}/brokers", clusters.BrokerList.as_view(), name="brokers"),
    path(f"{C}/brokers/<int:broker_id>", clusters.BrokerDetail.as_view(), name="broker"),
    path(f"{C}/acls", acls.AclList.as_view(), name="acls"),
    path(f"{C}/acls:batch", acls.AclBatch.as_view(), name="acls-batch"),
    path(f"{C}/users", users.UserList.as_view(), name="users"),
    path(f"{C}/users/<str:user_name>", users.UserDetail.as_view(), name="user"),
    # Before the topic routes: REST Proxy v3 spells "every topic/partition" as "-".
    path(
        f"{C}/topics/-/partitions/-/reassignment",
        moves.AllReassignments.as_view(),
        name="reassignments",
    ),
    path(f"{C}/partitions:elect-leaders", moves.ElectLeaders.as_view(), name="elect-leaders"),
    path(f"{C}/topics", topics.TopicList.as_view(), name="topics"),
    path(T, topics.TopicDetail.as_view(), name="topic"),
    path(f"{T}/configs", topics.TopicConfigList.as_view(), name="topic-configs"),
    path(f"{T}/configs:alter", topics.TopicConfigAlter.as_view(), name="topic-configs-alter"),
    path(f"{T}/configs/<str:name>", topics.TopicConfigDetail.as_view(), name="topic-config"),
    path(f"{T}/partitions", partitions.PartitionList.as_view(), name="partitions"),
    path(
        f"{T}/partitions/-/reassignment",
        moves.TopicReassignments.as_view(),
        name="topic-reassignments",
    ),
    path(P, partitions.PartitionDetail.as_view(), name="partition"),
    path(f"{P}:elect-leader", moves.PartitionElectLeader.as_view(), name="elect-leader"),
    path(f"{P}/reassignment", moves.PartitionReassignment.as_view(), name="reassignment"),
    path(f"{P}/replicas", partitions.ReplicaList.as_view(), name="replicas"),
    path(f"{P}/replicas/<int:broker_id>", partitions.ReplicaDetail.as_view(), name="replica"),
    path(f"{P}/segments", partitions.SegmentList.as_view(), name="segments"),
    path(f"{T}/records", records.RecordList.as_view(), name="records"),
    path(f"{C}/transactions", transactions.TransactionList.as_view(), name="transactions"),
    # Transactional ids may hold "/" as group ids do; the action is tried first.
    path(
        f"{C}/transactions/<path:transactional_id>:abort",
        transactions.TransactionAbort.as_view(),
        name="transaction-abort",
    ),
    path(
        f"{C}/transactions/<path:transactional_id>",
        transactions.TransactionDetail.as_view(),
        name="transaction",
    ),
    path(f"{C}/consumer-groups", groups.GroupList.as_view(), name="consumer-groups"),
    path(f"{G}/consumers", groups.ConsumerList.as_view(), name="consumers"),
    path(f"{G}/lags", groups.LagList.as_view(), name="consumer-lags"),
    path(
        f"{G}/lags/<str:topic_name>/partitions/<int:partition_id>",
        groups.LagDetail.as_view(),
        name="consumer-lag",
    ),
    path(f"{G}/lag-summary", groups.LagSummary.as_view(), name="consumer-lag-summary"),
    path(f"{G}/offsets:reset", groups.OffsetReset.as_view(), name="consumer-offsets-reset"),
    path(
        f"{G}/offsets/<str:topic_name>",
        groups.TopicOffsets.as_view(),
        name="consumer-topic-offsets",
    ),
    path(f"{G}/consumers/<path:consumer_id>", groups.ConsumerDetail.as_view(), name="consumer"),
    path(G, groups.GroupDetail.as_view(), name="consumer-group"),
    path(
        f"{C}/maintenance-schedules",
        maintenance.MaintenanceScheduleList.as_view(),
        name="maintenance-schedules",
    ),
    path(
        f"{C}/maintenance-schedules/<int:schedule_id>",
        maintenance.MaintenanceScheduleDetail.as_view(),
        name="maintenance-schedule",
    ),
    path(f"{C}/spark-loads", spark.SparkLoadList.as_view(), name="spark-loads"),
    path(L, spark.SparkLoadDetail.as_view(), name="spark-load"),
    path(f"{L}:cancel", spark.SparkLoadCancel.as_view(), name="spark-load-cancel"),
    path(f"{L}/log", spark.SparkLoadLog.as_view(), name="spark-load-log"),
]
