"""``mns-gateway credentials show|issue``: the access keys clients sign with.

``show`` says which keys the running gateway accepts, not what this shell would configure: it
signs a request with each key it knows (this shell's ``MNS_GATEWAY_ACCESS_KEY_*``, the pair
generated in the data dir) to the gateway at ``--url``, else at the URL ``serve`` recorded in
the data dir (:mod:`gateway.auth.served_keys`), and warns where the environment disagrees.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from gateway.auth.generated_keys import stored_credentials
from gateway.auth.served_keys import KnownKey, ServedKeys, known_keys, read_served_keys
from gateway.cli.common import (
    Commands,
    emit,
    existing_settings,
    iso_utc,
    settings_of,
    with_data_dir,
    with_json,
)
from gateway.config.settings import Settings
from gateway.errors import ExitCode
from gateway.errors.commands import CommandError

#: The gateway's answers to a request signed with a key it does not have.
REFUSED = frozenset({"InvalidAccessKeyId", "SignatureDoesNotMatch"})


def show(args: argparse.Namespace) -> int:
    settings = settings_of(args)
    served = read_served_keys(settings.data_dir)
    url = args.url or (served.url if served else None)
    known = known_keys(settings.access_keys, _generated(settings), settings.data_dir)
    if not known and served is None:
        raise CommandError(
            f"no credentials known here: no MNS_GATEWAY_ACCESS_KEY_ID in this shell and no "
            f"gateway data in {settings.data_dir} (pass --data-dir, or --url and the key)"
        )
    verdicts = {key.access_key_id: accepted(url, key) for key in known} if url else {}
    document = {
        "Gateway": url,
        "ServedAccessKeyIds": list(served.access_key_ids) if served else None,
        "AccessKeys": [
            {
                "AccessKeyId": key.access_key_id,
                "AccessKeySecret": key.access_key_secret,
                "Source": key.source,
                "Accepted": verdicts.get(key.access_key_id),
            }
            for key in known
        ],
    }
    emit(args, document, describe)
    for line in warnings(known, verdicts, url, served):
        print(line, file=sys.stderr)
    ok = not url or any(verdicts.values()) or None in verdicts.values()
    return ExitCode.OK if ok else ExitCode.FAILED


def _generated(settings: Settings) -> dict[str, str] | None:
    """The pair generated in the data dir (or shared database), never creating one."""
    if not settings.database_url:
        return stored_credentials(settings.data_dir) if settings.data_dir.is_dir() else None
    from gateway.store import SharedSettings
    from gateway.store.opening import open_database

    database = open_database(settings)
    try:
        return stored_credentials(settings.data_dir, SharedSettings(database))
    finally:
        database.close()


def accepted(url: str, key: KnownKey) -> bool | None:
    """Whether the gateway at ``url`` takes requests signed with ``key``; None when it does
    not answer."""
    from gateway.cli.admin_client import AdminClient
    from gateway.errors.commands import AdminError

    client = AdminClient(url, key.access_key_id, key.access_key_secret, timeout=5)
    try:
        client.call("GET", "/admin/dead-letters", {"limit": "1"})
    except AdminError as error:
        if error.code == "ConnectionFailed":
            return None
        return error.code not in REFUSED  # AccessDenied: a valid key, not an admin one
    return True


def warnings(
    known: list[KnownKey],
    verdicts: dict[str, bool | None],
    url: str | None,
    served: ServedKeys | None,
) -> list[str]:
    """Where the keys this shell knows disagree with the gateway: one line each."""
    if url is None:
        return ["note: no gateway URL known (pass --url): the keys are not checked"]
    if verdicts and all(v is None for v in verdicts.values()):
        return [f"note: no gateway answers at {url}: the keys are not checked"]
    lines = [
        f"warning: the gateway at {url} refuses {key.access_key_id} from {key.source}"
        for key in known
        if verdicts.get(key.access_key_id) is False
    ]
    if not any(verdicts.values()) and served is not None:
        ids = ", ".join(served.access_key_ids)
        lines.append(
            f"warning: that gateway serves with access key {ids}, whose secret this shell does "
            "not have: export MNS_GATEWAY_ACCESS_KEY_ID and _SECRET as for `serve`"
        )
    return lines


def describe(document: dict[str, Any]) -> str:
    served = document["ServedAccessKeyIds"]
    lines = [f"Gateway:         {document['Gateway'] or '- (pass --url)'}"]
    if served:
        lines.append(f"Serves with:     {', '.join(served)}")
    verdict = {True: "yes", False: "NO", None: "not checked"}
    for pair in document["AccessKeys"]:
        lines += [
            "",
            f"AccessKeyId:     {pair['AccessKeyId']}",
            f"AccessKeySecret: {pair['AccessKeySecret']}",
            f"From:            {pair['Source']}",
            f"Accepted:        {verdict[pair['Accepted']]}",
        ]
    return "\n".join(lines)


def issue(args: argparse.Namespace) -> int:
    """A temporary access key pair with its security token, kept in the store every replica
    reads (docs/protocol.md#temporary-credentials). ``--json`` gives Expiration in epoch ms,
    as every time in ``--json``; people get ISO-8601 UTC."""
    from gateway.store import TemporaryCredentialStore
    from gateway.store.opening import open_database

    database = open_database(existing_settings(args))
    try:
        credential = TemporaryCredentialStore(database, time.time).issue(args.ttl)
    finally:
        database.close()
    document = {**credential.document(), "Expiration": credential.expires_at * 1000}
    emit(args, document, describe_issued)
    return ExitCode.OK


def describe_issued(document: dict[str, Any]) -> str:
    shown = {**document, "Expiration": iso_utc(document["Expiration"])}
    return "\n".join(f"{name + ':':<17}{value}" for name, value in shown.items())


def ttl(text: str) -> int:
    from gateway.auth.temporary_credentials import check_ttl

    try:
        seconds = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    try:
        check_ttl(seconds)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return seconds


def add_command(commands: Commands) -> None:
    parser = commands.add_parser(
        "credentials", help="the access keys clients sign with: show them, issue temporary ones"
    )
    actions = parser.add_subparsers(dest="credentials_command", required=True, metavar="ACTION")
    shown = actions.add_parser(
        "show",
        help="the access keys known here and whether the running gateway accepts each",
    )
    shown.add_argument(
        "--url", help="the gateway to check against (default: the one serving the data dir)"
    )
    with_data_dir(shown)
    with_json(shown)
    shown.set_defaults(handler=show)
    issued = actions.add_parser(
        "issue",
        help="issue temporary credentials: an access key pair and the security token it is "
        "valid with, until its Expiration",
    )
    issued.add_argument(
        "--ttl", type=ttl, required=True, metavar="SECONDS", help="lifetime, 1 to 43200 seconds"
    )
    with_data_dir(issued)
    with_json(issued)
    issued.set_defaults(handler=issue)
