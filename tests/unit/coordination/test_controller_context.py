"""ControllerContext: when this broker acts as controller, and the fence its writes carry."""

from __future__ import annotations

from brokerd.coordination import zk_data
from brokerd.coordination.controller_context import ControllerContext


def test_active_only_while_named_in_controller_and_not_superseded():
    named = {"id": -1}
    context = ControllerContext(2, lambda: named["id"])
    assert not context.is_active  # vacant /controller

    named["id"] = 2
    context.epoch = 5
    context.observe_epoch(5)
    assert context.is_active

    named["id"] = 3
    assert not context.is_active  # another broker holds /controller

    named["id"] = 2
    context.observe_epoch(4)  # an older epoch changes nothing
    assert context.is_active and context.highest_seen_epoch == 5
    context.observe_epoch(6)  # a request from a newer controller: this one is deposed
    assert not context.is_active


def test_the_fence_is_the_controller_epoch_znode_at_the_version_taken():
    context = ControllerContext(1, lambda: 1, epoch=3, epoch_zk_version=2)
    assert context.fence == (zk_data.CONTROLLER_EPOCH, 2)
    context.epoch_zk_version = 7
    assert context.fence == ("/controller_epoch", 7)
