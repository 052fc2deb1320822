"""Account operations through the official SDK and mnscmd (docs/protocol.md#account-operations)."""

from __future__ import annotations

import pytest
from mns.account import Account, AccountMeta

from tests.gateway.api.sdk import server_error
from tests.mns_http import RawClient

ACCOUNT_XML = (
    '<?xml version="1.0" encoding="UTF-8"?><Account xmlns="http://mns.aliyuncs.com/doc/v1/">'
)


def test_attributes_are_kept_and_returned(account: Account) -> None:
    account.set_attributes(AccountMeta(logging_bucket="mns-logs-1"))
    assert account.get_attributes().logging_bucket == "mns-logs-1"
    account.set_attributes(AccountMeta())  # nothing sent: nothing changes
    assert account.get_attributes().logging_bucket == "mns-logs-1"
    account.set_attributes(AccountMeta(logging_bucket=""))  # sent empty: cleared
    assert account.get_attributes().logging_bucket == ""


def test_trace_enabled_is_kept_beside_the_bucket(raw: RawClient, account: Account) -> None:
    account.set_attributes(AccountMeta(logging_bucket="mns-logs-2"))
    body = f"{ACCOUNT_XML}<TraceEnabled>1</TraceEnabled></Account>".encode()
    assert raw.send("PUT", "/?accountmeta=true", body).status == 204
    got = raw.send("GET", "/?accountmeta=true")
    assert got.status == 200
    expected = b"<LoggingBucket>mns-logs-2</LoggingBucket>\n  <TraceEnabled>1</TraceEnabled>"
    assert expected in got.body
    assert account.get_attributes().logging_bucket == "mns-logs-2"


@pytest.mark.parametrize(
    "inner, code",
    [
        ("<LoggingBucket>Not_A_Bucket</LoggingBucket>", "InvalidArgument"),
        ("<TraceEnabled>yes</TraceEnabled>", "InvalidArgument"),
        ("<LoggingEnabled>True</LoggingEnabled>", "InvalidArgument"),
    ],
)
def test_bad_attributes_are_refused_and_change_nothing(
    raw: RawClient, account: Account, inner: str, code: str
) -> None:
    account.set_attributes(AccountMeta(logging_bucket="mns-logs-3"))
    response = raw.send("PUT", "/?accountmeta=true", f"{ACCOUNT_XML}{inner}</Account>".encode())
    assert (response.status, response.error_code()) == (400, code)
    assert account.get_attributes().logging_bucket == "mns-logs-3"


def test_the_root_without_accountmeta_is_no_operation(raw: RawClient) -> None:
    response = raw.send("GET", "/")
    assert (response.status, response.error_code()) == (400, "InvalidRequestURL")


def test_open_service_answers_as_for_an_account_that_has_it(account: Account) -> None:
    """The SDK's own sample treats this as "the account has opened the service"."""
    error = server_error(account.open_service)
    assert error.type == "INSTANCE_ID_IS_NOT_UNIQUE"
    assert "INSTANCE_ID_IS_NOT_UNIQUE" in error.message.upper()
    assert error.req_id
