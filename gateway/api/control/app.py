"""The control plane's HTTP front: ``POST /`` with ``x-acs-version: 2022-01-19`` (or, classic
signature, ``Action`` and ``Version`` in the query), answered in JSON.

:class:`ControlPlaneDispatch` sits in front of the XML API's Flask app and hands it every other
request untouched: the XML API has no ``POST /`` (it answers InvalidRequestURL there), so no call
of one API can reach the other. A call is checked in the service's order, each failure its own
JSON error with nothing changed: version, action, signature and time, nonce, admin rights, then
the operation's parameters (docs/control-plane.md#authentication).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Final

from gateway.api.control import (
    account,
    endpoints,
    event_rules,
    queues,
    subscriptions,
    tags,
    topics,
)
from gateway.api.control.authentication import Signer, verify
from gateway.api.control.context import ControlContext, Operation
from gateway.api.control.params import Params
from gateway.api.control.requests import RpcCall, parse_call
from gateway.api.environ import REFUSAL, size_body
from gateway.errors import Answer, answer_for
from gateway.errors.control import ControlError
from gateway.errors.mns import MNSError, body_too_large
from gateway.operations import Caller
from gateway.protocol.host_ids import host_id_for
from gateway.protocol.request_ids import new_request_id

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

    from gateway.auth.temporary_credentials import AccessKeys
    from gateway.operations import Operations

log = logging.getLogger(__name__)

VERSION: Final = "2022-01-19"
JSON_TYPE: Final = "application/json;charset=utf-8"
OPERATIONS: Final[dict[str, Operation]] = {
    **queues.OPERATIONS,
    **topics.OPERATIONS,
    **subscriptions.OPERATIONS,
    **tags.OPERATIONS,
    **endpoints.OPERATIONS,
    **account.OPERATIONS,
    **event_rules.OPERATIONS,
}


def is_control_call(environ: WSGIEnvironment) -> bool:
    """``POST /`` naming an RPC version, in a header (ACS3) or the query (classic)."""
    if environ.get("REQUEST_METHOD") != "POST" or environ.get("PATH_INFO") != "/":
        return False
    query = environ.get("QUERY_STRING", "")
    return "HTTP_X_ACS_VERSION" in environ or "Version=" in query or "Action=" in query


def success(request_id: str, data: Any) -> dict[str, Any]:
    return {
        "RequestId": request_id,
        "Code": 200,
        "Status": "Success",
        "Success": True,
        "Message": "operation success",
        "Data": data,
    }


def failure(request_id: str, error: Answer, host: str) -> dict[str, Any]:
    return {
        "RequestId": request_id,
        "HostId": host,
        "Code": error.code,
        "Message": error.message,
        "Recommend": "",
    }


class ControlPlaneApp:
    """The control plane as a WSGI app over the operation layer, authenticating against
    ``keys``. Its calls go through the operations' hooks (an outage is counted by the outage
    hook, as for every front end)."""

    def __init__(
        self,
        operations: Operations,
        keys: AccessKeys,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.operations = operations
        self.keys = keys
        self.clock = clock

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        request_id = new_request_id()
        headers = [("Content-Type", JSON_TYPE), ("x-acs-request-id", request_id)]
        caller = Caller(request_id=request_id, remote_address=str(environ.get("REMOTE_ADDR", "")))
        try:
            status, document = 200, success(request_id, self.handle(environ, caller))
        except Exception as exc:
            answer = answer_for(_as_control(exc))
            if answer.log_traceback:
                log.exception("unhandled error in a control-plane call")
            if answer.retry_after is not None:
                headers.append(("Retry-After", str(answer.retry_after)))
            status, document = answer.status, failure(request_id, answer, self._host(environ))
        body = json.dumps(document, separators=(",", ":")).encode()
        headers.append(("Content-Length", str(len(body))))
        start_response(f"{status} {'OK' if status == 200 else 'Error'}", headers)
        return [body]

    def handle(self, environ: WSGIEnvironment, caller: Caller) -> Any:
        refusal = environ.get(REFUSAL)
        if refusal is not None:
            raise refusal
        settings = self.operations.settings
        call = _read_call(environ, settings.max_body_bytes)
        if call.version != VERSION:
            raise ControlError("InvalidVersion")
        operation = OPERATIONS.get(call.action)
        if operation is None:
            raise ControlError("InvalidAction.NotFound")
        signer = verify(call, self._secret_for, self.clock())
        self._check_signer(signer)
        context = ControlContext(self.operations, caller)
        return operation(Params(call.operation_params()), context)

    def _secret_for(self, key_id: str, token: str | None) -> str:
        try:
            return self.keys.secret_for(key_id, token, self.clock())
        except MNSError as exc:
            if exc.code == "InvalidAccessKeyId":
                raise ControlError("InvalidAccessKeyId.NotFound") from exc
            raise

    def _check_signer(self, signer: Signer) -> None:
        control = self.operations.store.control
        if not control.remember_nonce(signer.key_id, signer.nonce, signer.remember_until):
            raise ControlError("SignatureNonceUsed")
        allowed = self.operations.settings.admin_access_keys
        if allowed and signer.key_id not in allowed:
            raise ControlError("Forbidden.RAM")

    def _host(self, environ: WSGIEnvironment) -> str:
        """The data API's ``HostId``, never the raw Host header."""
        return host_id_for(self.operations.settings.base_url, str(environ.get("HTTP_HOST", "")))


def _as_control(error: Exception) -> Exception:
    """The data API's errors keep their code, status and message; an outage or a bug is left
    to :func:`gateway.errors.answer_for`."""
    if isinstance(error, MNSError):
        return ControlError.from_mns(error)
    return error


def _headers(environ: WSGIEnvironment) -> dict[str, str]:
    headers = {
        key[5:].replace("_", "-").lower(): str(value)
        for key, value in environ.items()
        if key.startswith("HTTP_")
    }
    if environ.get("CONTENT_TYPE"):
        headers["content-type"] = str(environ["CONTENT_TYPE"])
    return headers


def _read_call(environ: WSGIEnvironment, limit: int) -> RpcCall:
    """The call, its body read within the gateway's body limit."""
    env: dict[str, Any] = environ  # type: ignore[assignment]
    declared = env.get("CONTENT_LENGTH") or "0"
    if not declared.isdigit():
        raise ControlError("InvalidParameter", "The Content-Length is not a number.")
    if int(declared) > limit:
        raise body_too_large(limit)
    size_body(env, limit)
    length = int(env.get("CONTENT_LENGTH") or 0)
    body = env["wsgi.input"].read(length) if length else b""
    return parse_call(
        str(env.get("REQUEST_METHOD", "")), str(env.get("QUERY_STRING", "")), _headers(env), body
    )


class ControlPlaneDispatch:
    """Control-plane calls to ``control``, everything else to ``data`` (the XML API)."""

    def __init__(self, data: WSGIApplication, control: WSGIApplication) -> None:
        self.data = data
        self.control = control

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        target = self.control if is_control_call(environ) else self.data
        return target(environ, start_response)
