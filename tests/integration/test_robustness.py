"""Bad input closes one connection at most; the broker keeps serving everyone else."""

import socket
import struct

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brokerd.protocol.errors import ErrorCode
from tests.integration.wire import WireClient, encode_request, nested, request


def metadata_request():
    return request(
        3,
        12,
        topics=None,
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )


def test_pipelined_requests_are_answered_in_order(broker):
    with WireClient(broker.bootstrap) as client:
        bodies = [
            request(18, 3, client_software_name="w", client_software_version="1"),
            metadata_request(),
            request(18, 0),
            metadata_request(),
        ]
        payload = b"".join(encode_request(b, i) for i, b in enumerate(bodies, start=100))
        client.send_raw(payload)
        got = [client.receive(b.__api_key__, b.__version__)[0] for b in bodies]
    assert got == [100, 101, 102, 103]


def _bad_frame_closes_only_that_connection(broker, data: bytes):
    with WireClient(broker.bootstrap) as bystander, WireClient(broker.bootstrap) as offender:
        offender.send_raw(data)
        assert offender.is_closed_by_peer()
        assert bystander.call(request(18, 0)).error_code == ErrorCode.none


def test_negative_length(broker):
    _bad_frame_closes_only_that_connection(broker, struct.pack(">i", -5))


def test_length_over_socket_request_max_bytes(broker):
    _bad_frame_closes_only_that_connection(broker, struct.pack(">i", 200 * 1024 * 1024))


def test_garbage_body(broker):
    frame = struct.pack(">hhi", 3, 12, 1) + b"\xff" * 20
    _bad_frame_closes_only_that_connection(broker, struct.pack(">i", len(frame)) + frame)


def _real_requests() -> list[bytes]:
    produce_partition = nested(0, 9, "PartitionProduceData", index=0, records=b"\x00" * 70)
    produce_topic = nested(
        0, 9, "TopicProduceData", name="fuzz", partition_data=(produce_partition,)
    )
    import datetime

    bodies = [
        metadata_request(),
        request(18, 3, client_software_name="fuzz", client_software_version="1"),
        request(
            0,
            9,
            transactional_id=None,
            acks=1,
            timeout=datetime.timedelta(seconds=1),
            topic_data=(produce_topic,),
        ),
        request(
            32,
            4,
            resources=(
                nested(
                    32,
                    4,
                    "DescribeConfigsResource",
                    resource_type=2,
                    resource_name="fuzz",
                    configuration_keys=None,
                ),
            ),
            include_synonyms=True,
            include_documentation=False,
        ),
    ]
    return [encode_request(body, 1)[4:] for body in bodies]


REAL = _real_requests()


@st.composite
def mutated_frames(draw):
    frame = bytearray(draw(st.sampled_from(REAL)))
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["flip", "truncate", "insert"]))
        if kind == "flip" and frame:
            frame[draw(st.integers(0, len(frame) - 1))] = draw(st.integers(0, 255))
        elif kind == "truncate" and len(frame) > 8:
            frame = frame[: draw(st.integers(8, len(frame)))]
        else:
            frame[draw(st.integers(0, len(frame))) : 0] = draw(st.binary(max_size=8))
    return bytes(frame)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(frame=mutated_frames())
def test_fuzzed_requests_never_break_the_broker(broker, frame):
    sock = socket.create_connection(("127.0.0.1", broker.port), timeout=5)
    try:
        sock.sendall(struct.pack(">i", len(frame)) + frame)
        sock.shutdown(socket.SHUT_WR)
        sock.settimeout(5)
        while sock.recv(65536):
            pass
    except (ConnectionError, TimeoutError):
        pass
    finally:
        sock.close()
    assert broker.alive()


def test_normal_client_after_fuzzing(broker):
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
    producer.send("after-fuzz", b"still alive").get(10)
    producer.close()
    assert "Traceback" not in broker.output
