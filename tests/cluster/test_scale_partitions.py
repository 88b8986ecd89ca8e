"""Many partitions on three brokers: every partition has a leader after creation through a
real client, after a controlled shutdown of one broker, after its restart (back in every
ISR) and after kill -9 of the controller.

Bounded in size (PARTITIONS at RF 3, each broker holding a replica of every partition) so
that it runs in the suite; what it asserts is behaviour, never how long anything took (the
timings are bench/scale.py's). Before the controller pipelined its ZooKeeper writes, a topic
of this size took minutes to get its leaders, and a broker's controlled shutdown wrote one
state after another.
"""

from __future__ import annotations

from confluent_kafka.admin import AdminClient, NewTopic

PARTITIONS = 300


def _all_led(topic: str, partitions: int, excluded: int | None = None):
    def check(meta) -> bool:
        parts = meta["topics"].get(topic, {})
        return len(parts) == partitions and all(
            p["leader"] in meta["brokers"] and p["leader"] != excluded for p in parts.values()
        )

    return check


def test_a_wide_topic_is_led_after_creation_controlled_shutdown_and_controller_failover(
    cluster, topic_name
):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap, "socket.timeout.ms": 60000})
    created = admin.create_topics(
        [NewTopic(topic_name, num_partitions=PARTITIONS, replication_factor=3)],
        operation_timeout=60,
        request_timeout=60,
    )
    created[topic_name].result(60)
    meta = cluster.wait_for(_all_led(topic_name, PARTITIONS), 60, "every partition led")
    assert {len(p["replicas"]) for p in meta["topics"][topic_name].values()} == {3}

    # A controlled shutdown of a broker that is not the controller moves every leadership
    # it held away before it leaves.
    controller = meta["controller"]
    stopping_id = next(b for b in cluster.brokers if b != controller)
    led_by_it = [
        p for p, info in meta["topics"][topic_name].items() if info["leader"] == stopping_id
    ]
    assert led_by_it, "the round-robin assignment gave the stopping broker no leaderships"
    stopping = cluster.brokers[stopping_id]
    assert stopping.terminate() == 0
    assert "controlled shutdown succeeded" in stopping.output
    cluster.wait_for(
        _all_led(topic_name, PARTITIONS, excluded=stopping_id),
        60,
        "every partition led by another broker after the controlled shutdown",
    )
    stopping.start()
    cluster.wait_for(
        lambda m: stopping_id in m["brokers"], 60, f"broker {stopping_id} registered again"
    )
    # Restarted, it serves all its replicas again: back in every ISR (it loaded its logs
    # and caught up), every partition still led.
    cluster.wait_for(
        lambda m: (
            _all_led(topic_name, PARTITIONS)(m)
            and all(
                stopping_id in p["isr"] and len(p["isr"]) == 3
                for p in m["topics"][topic_name].values()
            )
        ),
        120,
        f"broker {stopping_id} back in every ISR after its restart",
    )

    # kill -9 of the controller: a new one takes office and elects leaders for all the
    # partitions the dead one led.
    meta = cluster.metadata(topic_name)
    controller = meta["controller"]
    assert controller in cluster.brokers
    cluster.brokers[controller].kill()
    cluster.wait_for(
        lambda m: (
            m["controller"] not in (controller, -1)
            and _all_led(topic_name, PARTITIONS, excluded=controller)(m)
        ),
        60,
        "every partition led by a live broker after the controller was killed",
    )
