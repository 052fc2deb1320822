"""``alibabacloud-smqproxy20260409``, the JSON message API's SDK, configured for a gateway.

Its ``alibabacloud-gateway-mns`` 0.0.3 dependency cannot be constructed: ``Client.__init__``
assigns its three signing constants to a variable named ``undefined`` that does not exist, so
every construction raises ``NameError`` (issue 25). Here the SDK's own constructor runs up to that
point, and the test sets the three attributes on the gateway client itself, with the values the
broken constructor means to set; no SDK file and no SDK function is changed.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from alibabacloud_gateway_mns.client import Client as GatewayMnsClient
from alibabacloud_gateway_spi.client import Client as SPIClient
from alibabacloud_smqproxy20260409.client import Client as SmqClient
from alibabacloud_tea_openapi import utils_models
from darabonba.exceptions import UnretryableException
from darabonba.runtime import RuntimeOptions

__all__ = ["RuntimeOptions", "UnretryableException", "smq_client"]


def gateway_mns_client() -> GatewayMnsClient:
    spi = GatewayMnsClient.__new__(GatewayMnsClient)
    SPIClient.__init__(spi)
    # What GatewayMnsClient.__init__ means to set (it names ``undefined`` instead of ``self``).
    spi._sign_prefix = "aliyun_v4"
    spi._sign_suffix = "aliyun_v4_request"
    spi._auth_prefix = "MNS4-HMAC-SHA256"
    return spi


def smq_client(
    url: str,
    key_id: str,
    secret: str,
    *,
    security_token: str | None = None,
    region: str = "local",
) -> SmqClient:
    """A JSON-API client for the gateway at ``url`` (``http://host:port``)."""
    parts = urlsplit(url)
    config = utils_models.Config(
        access_key_id=key_id,
        access_key_secret=secret,
        security_token=security_token,
        endpoint=parts.netloc,
        protocol=parts.scheme,
        region_id=region,
        read_timeout=30000,
        connect_timeout=5000,
    )
    client = SmqClient.__new__(SmqClient)
    try:
        SmqClient.__init__(client, config)
        return client  # a release of alibabacloud-gateway-mns with the constructor fixed
    except NameError:  # raised by GatewayMnsClient(), after the SDK set everything else
        client._spi = gateway_mns_client()
    client._endpoint_rule = "regional"
    return client
