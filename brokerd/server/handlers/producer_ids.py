"""InitProducerId (22): producer ids for idempotent producers, from ZooKeeper blocks.

A transactional id goes to the transaction coordinator (handlers/transactions.py).
"""

from __future__ import annotations

from brokerd.protocol.errors import ErrorCode
from brokerd.protocol.framing import Request
from brokerd.protocol.messages import NO_THROTTLE, build, response_module
from brokerd.security.acl import AclOperation, ResourceType

from .context import HandlerContext
from .transactions import init_transactional_producer_id


async def handle_init_producer_id(ctx: HandlerContext, request: Request):
    module = response_module(request.api_key, request.api_version)
    transactional_id = request.body.transactional_id
    if transactional_id is not None:
        # ACLs: WRITE on the transactional id (Kafka's handleInitProducerIdRequest).
        if not ctx.auth.authorize(
            AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id
        ):
            return build(
                module.InitProducerIdResponse,
                throttle_time=NO_THROTTLE,
                error_code=ErrorCode.transactional_id_authorization_failed,
                producer_id=-1,
                producer_epoch=-1,
            )
        return await init_transactional_producer_id(ctx, request)
    # ACLs: an idempotent producer needs IDEMPOTENT_WRITE on the cluster or WRITE on some
    # topic (Kafka 2.8+).
    if not (
        ctx.auth.cluster(AclOperation.IDEMPOTENT_WRITE)
        or ctx.auth.by_resource_type(AclOperation.WRITE, ResourceType.TOPIC)
    ):
        return build(
            module.InitProducerIdResponse,
            throttle_time=NO_THROTTLE,
            error_code=ErrorCode.cluster_authorization_failed,
            producer_id=-1,
            producer_epoch=-1,
        )
    producer_id = await ctx.producer_ids.next_id()
    return build(
        module.InitProducerIdResponse,
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none,
        producer_id=producer_id,
        producer_epoch=0,
    )


HANDLERS = {22: handle_init_producer_id}
