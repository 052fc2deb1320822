"""``HostId``, the element of every error answer naming the host a request addressed: pure.

Every front end's errors (the MNS API's XML and JSON, the control plane's JSON) take it from
here, so a raw ``Host`` header is never echoed unchecked (docs/protocol.md#error-responses).
"""

from __future__ import annotations

import re

#: A Host header worth echoing in ``HostId``: a name or address and an optional port.
_HOST = re.compile(r"[A-Za-z0-9.-]{1,253}(?::[0-9]{1,5})?|\[[0-9A-Fa-f:.]{2,45}\](?::[0-9]{1,5})?")


def host_id_for(public_url: str, host: str) -> str:
    """``HostId``: the host the request addressed, as the service names it
    (``http://{account}.mns.{region}.aliyuncs.com``), with the public URL's scheme (a proxy in
    front may have ended TLS); the public URL itself when the request named none or an odd one
    (docs/protocol.md#error-responses). Every front end's errors use it, never the raw header."""
    if not _HOST.fullmatch(host):
        return public_url
    return f"{public_url.partition(':')[0]}://{host}"
