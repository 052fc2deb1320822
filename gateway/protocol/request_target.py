"""The request target as the signature covers it: the path and query, whatever form it came in.

RFC 9112 section 3.2 has four forms of request-target, and two reach an MNS server: the origin
form (``/queues/q?x=1``), which clients send to a server, and the absolute form
(``http://host/queues/q?x=1``), which they send to a proxy, and so to the gateway when their
``HTTP_PROXY`` points at it. A server must accept the absolute form (RFC 9112 section 3.2.2);
the SDKs sign the path and query in both cases (docs/protocol.md#absolute-form-request-targets).
One function turns either into what authentication and routing both use, so they never
disagree.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote

#: ``scheme "://"``: RFC 3986's scheme grammar followed by an authority.
_ABSOLUTE_FORM = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


@dataclass(frozen=True, slots=True)
class RequestTarget:
    #: Path and query exactly as sent, not decoded: ``/queues/q?ReceiptHandle=a+b``.
    resource: str
    #: The host (and port) an absolute-form target names, which then stands in for the Host
    #: header (RFC 9112 section 3.2.2); ``None`` for the origin form.
    authority: str | None = None

    @property
    def path(self) -> str:
        return self.resource.partition("?")[0]

    @property
    def query(self) -> str:
        return self.resource.partition("?")[2]


def parse_request_target(target: str) -> RequestTarget:
    """The resource and authority of ``target``; an origin-form target is its own resource.

    The absolute form's path may be empty (``http://host?x=1``): its resource is then ``/``
    with the query, as RFC 9112 section 3.2.1 writes the origin form of such a URI.
    """
    match = _ABSOLUTE_FORM.match(target)
    if match is None:
        return RequestTarget(target)
    rest = target[match.end() :]
    end = min((i for i in (rest.find("/"), rest.find("?")) if i >= 0), default=len(rest))
    authority, resource = rest[:end], rest[end:]
    if not resource.startswith("/"):
        resource = "/" + resource
    return RequestTarget(resource, authority)


def query_parameters(query: str) -> dict[str, str]:
    """The query's parameters as signature V4 signs them and as every view reads them: names
    percent-decoded, trimmed and lowercased, values percent-decoded and trimmed (``+`` kept
    literally: docs/protocol.md#raw-request-uri); a name given twice keeps its last value; a
    name without ``=`` has the empty value.

    One parse for both, so a view never reads a value other than the one signed: the V4
    signers trim names and values before signing (``alibabacloud-gateway-mns``'s canonical
    query), and a view that read ``peekonly=%20true`` untrimmed saw something the signature did
    not say (docs/protocol.md#signature-v4).
    """
    params: dict[str, str] = {}
    for item in query.split("&"):
        if item:
            name, _, value = item.partition("=")
            params[unquote(name).strip().lower()] = unquote(value).strip()
    return params
