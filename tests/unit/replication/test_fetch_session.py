"""The follower's fetch session (KIP-227): what each request lists and forgets, and how
session errors and lost answers start a new full session."""

from brokerd.protocol.errors import ErrorCode
from brokerd.replication.fetch_session import FetchSessionHandler, PartitionFetch

A, B, C = ("t", 0), ("t", 1), ("u", 0)


def at(offset: int, epoch: int = 0) -> PartitionFetch:
    return PartitionFetch(offset, epoch, 1048576)


def opened(wanted) -> FetchSessionHandler:
    handler = FetchSessionHandler()
    plan = handler.build(wanted)
    assert plan.full and plan.session_id == 0 and plan.send == wanted
    assert handler.handle_response(plan, ErrorCode.none, 77)
    return handler


def test_once_open_an_idle_fetch_lists_no_partition():
    handler = opened({A: at(5), B: at(9)})
    for epoch in (1, 2, 3):
        plan = handler.build({A: at(5), B: at(9)})
        assert (plan.session_id, plan.epoch, plan.send, plan.forget) == (77, epoch, {}, [])
        assert handler.handle_response(plan, ErrorCode.none, 77)


def test_only_changed_added_and_removed_partitions_are_sent():
    handler = opened({A: at(5), B: at(9)})
    plan = handler.build({A: at(6), B: at(9), C: at(0)})  # A appended, C added
    assert plan.send == {A: at(6), C: at(0)} and plan.forget == []
    handler.handle_response(plan, ErrorCode.none, 77)
    plan = handler.build({A: at(6), C: at(0, epoch=3)})  # B moved away, C's leader changed
    assert plan.send == {C: at(0, epoch=3)} and plan.forget == [B]
    handler.handle_response(plan, ErrorCode.none, 77)
    assert handler.build({A: at(6), C: at(0, epoch=3)}).send == {}


def test_session_errors_and_lost_answers_start_a_full_session():
    wanted = {A: at(5)}
    handler = opened(wanted)
    plan = handler.build(wanted)
    # The leader restarted or evicted us: a new session, not naming the old one.
    assert not handler.handle_response(plan, ErrorCode.fetch_session_id_not_found, 0)
    plan = handler.build(wanted)
    assert plan.full and plan.session_id == 0 and plan.send == wanted
    handler.handle_response(plan, ErrorCode.none, 78)

    plan = handler.build(wanted)
    assert not handler.handle_response(plan, ErrorCode.invalid_fetch_session_epoch, 0)
    plan = handler.build(wanted)  # closes session 78 and opens another
    assert plan.full and plan.session_id == 78 and plan.send == wanted
    handler.handle_response(plan, ErrorCode.none, 79)

    handler.build(wanted)
    handler.handle_error()  # no answer: the leader may have moved the epoch on
    plan = handler.build(wanted)
    assert plan.full and plan.session_id == 79 and plan.send == wanted
    assert handler.full_fetches == 3


def test_a_leader_without_a_free_session_gets_full_fetches():
    handler = FetchSessionHandler()
    for _ in range(3):
        plan = handler.build({A: at(5)})
        assert plan.full and plan.send == {A: at(5)}
        assert handler.handle_response(plan, ErrorCode.none, 0)


def test_changes_alone_build_the_next_request():
    handler = opened({A: at(5), B: at(9)})
    plan = handler.build_changes({})  # a quiet round
    assert (plan.epoch, plan.send, plan.forget) == (1, {}, [])
    assert plan.wanted == {A: at(5), B: at(9)}  # the leader's view of the session
    handler.handle_response(plan, ErrorCode.none, 77)
    # A appended, B no longer wanted, C new, an unchanged A-like report sends nothing.
    plan = handler.build_changes({A: at(6), B: None, C: at(0)})
    assert plan.send == {A: at(6), C: at(0)} and plan.forget == [B]
    handler.handle_response(plan, ErrorCode.none, 77)
    plan = handler.build_changes({A: at(6), B: None})  # nothing new: B already forgotten
    assert (plan.send, plan.forget) == ({}, [])
    assert plan.wanted == {A: at(6), C: at(0)}
    handler.handle_error()
    assert handler.needs_full
