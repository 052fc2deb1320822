"""The control plane's two official clients, configured for a gateway (never edited):

- ``alibabacloud-mns-open20220119`` (Darabonba, ACS3-HMAC-SHA256), with ``protocol='http'``;
- ``aliyun-python-sdk-core`` with ``aliyun-python-sdk-mns-open``'s requests (classic RPC
  signature, HMAC-SHA1), pointed at the gateway with ``set_endpoint``; its ``CommonRequest``
  makes the calls that SDK has no class for (tags), as the Terraform provider makes them.
"""

from __future__ import annotations

import json
from typing import Any

from alibabacloud_mns_open20220119.client import Client as DaraClient
from alibabacloud_tea_openapi import models as openapi_models
from aliyunsdkcore.acs_exception.exceptions import ServerException
from aliyunsdkcore.client import AcsClient
from aliyunsdkcore.request import CommonRequest

from tests.conftest import ACCESS_KEY_ID, ACCESS_KEY_SECRET

REGION = "cn-hangzhou"


def darabonba(
    port: int, key_id: str = ACCESS_KEY_ID, secret: str = ACCESS_KEY_SECRET
) -> DaraClient:
    config = openapi_models.Config(
        access_key_id=key_id,
        access_key_secret=secret,
        endpoint=f"127.0.0.1:{port}",
        protocol="http",
        region_id=REGION,
    )
    return DaraClient(config)


class Classic:
    """``AcsClient`` with its requests sent to the gateway: ``call`` runs an SDK request object
    or a CommonRequest and returns the decoded answer."""

    def __init__(
        self, port: int, key_id: str = ACCESS_KEY_ID, secret: str = ACCESS_KEY_SECRET
    ) -> None:
        self.endpoint = f"127.0.0.1:{port}"
        self.client = AcsClient(key_id, secret, REGION, auto_retry=False, max_retry_time=0)

    def call(self, request: Any) -> dict[str, Any]:
        request.set_endpoint(self.endpoint)
        request.set_protocol_type("http")
        return json.loads(self.client.do_action_with_exception(request))

    def common(self, action: str, params: dict[str, Any], *, form: bool = True) -> dict[str, Any]:
        """A CommonRequest as the Terraform provider sends its calls: POST, parameters in the
        form body (``form=False``: in the query)."""
        request = CommonRequest(domain=self.endpoint, version="2022-01-19", action_name=action)
        request.set_method("POST")
        request.set_product("Mns-open")
        for name, value in params.items():
            if form:
                request.add_body_params(name, str(value))
            else:
                request.add_query_param(name, str(value))
        return self.call(request)

    def error(self, action: str, params: dict[str, Any]) -> ServerException:
        try:
            self.common(action, params)
        except ServerException as exc:
            return exc
        raise AssertionError(f"{action} succeeded")
