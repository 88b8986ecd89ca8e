"""DescribeUserScramCredentials (50) and AlterUserScramCredentials (51), as ZooKeeper-mode
Kafka's ZkAdminManager answers them: credentials under /config/users/<user> (see
brokerd.security.sasl.credentials), mechanisms by Kafka's ScramMechanism type (1 SHA-256,
2 SHA-512), salted passwords turned into stored/server keys here, never kept as sent.
Without an authorizer anyone may call them, as in Kafka (ACLs are issue 14's next part)."""

from __future__ import annotations

import hashlib
import hmac
from collections import Counter
from urllib.parse import unquote

from brokerd.coordination import zk_data
from brokerd.protocol.errors import ErrorCode
from brokerd.protocol.framing import Request
from brokerd.protocol.messages import NO_THROTTLE, build, response_module
from brokerd.security.acl import AclOperation
from brokerd.security.sasl.credentials import USERS_PATH, credential_from_node, user_path
from brokerd.security.sasl.scram import MAX_ITERATIONS, MECHANISMS, MIN_ITERATIONS, ScramCredential

from .context import HandlerContext

MECHANISM_TYPES = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
TYPE_OF = {name: code for code, name in MECHANISM_TYPES.items()}


async def _user_config(ctx: HandlerContext, user: str) -> dict[str, str]:
    found = await ctx.zk.get_json(user_path(user))
    config = found[0].get("config") if found and isinstance(found[0], dict) else None
    return dict(config) if isinstance(config, dict) else {}


def _credential_infos(module, config: dict[str, str]) -> tuple:
    infos = []
    for name in MECHANISMS:
        credential = credential_from_node({"config": config}, name)
        if credential is not None:
            infos.append(
                build(
                    module.CredentialInfo, mechanism=TYPE_OF[name], iterations=credential.iterations
                )
            )
    return tuple(infos)


async def handle_describe(ctx: HandlerContext, request: Request):
    module = response_module(request.api_key, request.api_version)
    if not ctx.auth.cluster(AclOperation.DESCRIBE):  # ACLs: DESCRIBE on the cluster
        return build(
            module.DescribeUserScramCredentialsResponse,
            throttle_time=NO_THROTTLE,
            error_code=ErrorCode.cluster_authorization_failed,
            error_message=None,
            results=(),
        )
    asked = [u.name for u in request.body.users] if request.body.users else None
    if asked is None:
        asked_all = [unquote(name) for name in sorted(await ctx.zk.children(USERS_PATH))]
    else:
        asked_all = list(dict.fromkeys(asked))
    duplicates = {u for u, n in Counter(asked or []).items() if n > 1}
    results = []
    for user in asked_all:
        if user in duplicates:
            results.append(
                _describe_result(
                    module,
                    user,
                    ErrorCode.duplicate_resource,
                    "Cannot describe SCRAM credentials for the same user twice in a single "
                    f"request: {user}",
                )
            )
            continue
        infos = _credential_infos(module, await _user_config(ctx, user))
        if not infos:
            if asked is None:
                continue  # listing: only users that have credentials
            results.append(
                _describe_result(
                    module,
                    user,
                    ErrorCode.resource_not_found,
                    f"Attempt to describe a user credential that does not exist: {user}",
                )
            )
            continue
        results.append(_describe_result(module, user, ErrorCode.none, None, infos))
    return build(
        module.DescribeUserScramCredentialsResponse,
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none,
        error_message=None,
        results=tuple(results),
    )


def _describe_result(module, user, code, message, infos=()):
    return build(
        module.DescribeUserScramCredentialsResult,
        user=user,
        error_code=code,
        error_message=message,
        credential_infos=infos,
    )


def _stored(mechanism: str, iterations: int, salt: bytes, salted: bytes) -> ScramCredential:
    digest = MECHANISMS[mechanism]
    client_key = hmac.new(salted, b"Client Key", digest).digest()
    return ScramCredential(
        salt=salt,
        stored_key=hashlib.new(digest, client_key).digest(),
        server_key=hmac.new(salted, b"Server Key", digest).digest(),
        iterations=iterations,
    )


async def handle_alter(ctx: HandlerContext, request: Request):
    module = response_module(request.api_key, request.api_version)
    body = request.body
    users = list(
        dict.fromkeys([d.name for d in body.deletions] + [u.name for u in body.upsertions])
    )
    errors: dict[str, tuple[ErrorCode, str]] = {}

    def fail(user: str, code: ErrorCode, message: str) -> None:
        errors.setdefault(user, (code, message))

    if not ctx.auth.cluster(AclOperation.ALTER):  # ACLs: ALTER on the cluster
        for user in users:
            fail(user, ErrorCode.cluster_authorization_failed, "")

    seen = Counter((d.name, d.mechanism) for d in body.deletions) + Counter(
        (u.name, u.mechanism) for u in body.upsertions
    )
    for (user, _), count in seen.items():
        if count > 1:
            fail(
                user,
                ErrorCode.duplicate_resource,
                "A user credential cannot be altered twice in the same request",
            )
    for change in [*body.deletions, *body.upsertions]:
        if not change.name:
            fail(change.name, ErrorCode.unacceptable_credential, "Username must not be empty")
        if change.mechanism not in MECHANISM_TYPES:
            fail(change.name, ErrorCode.unsupported_sasl_mechanism, "Unknown SCRAM mechanism")
    for upsertion in body.upsertions:
        if upsertion.iterations < MIN_ITERATIONS:
            fail(upsertion.name, ErrorCode.unacceptable_credential, "Too few iterations")
        elif upsertion.iterations > MAX_ITERATIONS:
            fail(upsertion.name, ErrorCode.unacceptable_credential, "Too many iterations")
    results = []
    for user in users:
        if user not in errors:
            await _alter_user(ctx, user, body, fail)
        code, message = errors.get(user, (ErrorCode.none, None))
        results.append(
            build(
                module.AlterUserScramCredentialsResult,
                user=user,
                error_code=code,
                error_message=message,
            )
        )
    return build(
        module.AlterUserScramCredentialsResponse, throttle_time=NO_THROTTLE, results=tuple(results)
    )


async def _alter_user(ctx: HandlerContext, user: str, body, fail) -> None:
    config = await _user_config(ctx, user)
    for deletion in (d for d in body.deletions if d.name == user):
        name = MECHANISM_TYPES[deletion.mechanism]
        if name not in config:
            fail(
                user,
                ErrorCode.resource_not_found,
                "Attempt to delete a user credential that does not exist",
            )
            return
        del config[name]
    for upsertion in (u for u in body.upsertions if u.name == user):
        name = MECHANISM_TYPES[upsertion.mechanism]
        credential = _stored(name, upsertion.iterations, upsertion.salt, upsertion.salted_password)
        config[name] = credential.to_text()
    path = user_path(user)
    await ctx.zk.upsert_json(path, zk_data.entity_config(config))
    await ctx.zk.create_json(
        f"{zk_data.CONFIG_CHANGES}/{zk_data.CONFIG_CHANGE_PREFIX}",
        zk_data.config_change_notification(path.removeprefix("/config/")),
        sequence=True,
    )


HANDLERS = {50: handle_describe, 51: handle_alter}
