"""``mns-gateway admin``: the dead-letter and delivery-replay commands, and a subscription's
Standard Webhooks switch, against a gateway elsewhere, through its ``/admin/`` API, with requests
signed by an access key.

The key comes from ``--access-key-id``/``--access-key-secret``, else this shell's
``MNS_GATEWAY_ACCESS_KEY_ID``/``_SECRET``, else the pair generated in the data dir; when the
gateway refuses a key that was not given explicitly, the error says which one was used and where
it came from (a gateway started with its own key refuses the generated pair).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path

from gateway.auth.generated_keys import stored_credentials
from gateway.auth.served_keys import KnownKey, known_keys
from gateway.cli import dead_letters, deliveries, standard_webhooks
from gateway.cli.common import Commands, settings_of
from gateway.errors.commands import CommandError

#: The gateway's answers to a request signed with a key it does not have.
REFUSED_KEY_CODES = frozenset({"InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied"})


def admin(args: argparse.Namespace) -> int:
    from gateway.cli.admin_client import (
        AdminClient,
        RemoteDeadLetters,
        RemoteDeliveries,
        RemoteStandardWebhooks,
    )
    from gateway.errors.commands import AdminError

    settings = settings_of(args)
    url = args.url or settings.base_url
    key = _key(args, settings.access_keys, settings.data_dir)
    client = AdminClient(url, key.access_key_id, key.access_key_secret)
    try:
        if args.admin_command == "deliveries":
            return deliveries.run(args, RemoteDeliveries(client))
        if args.admin_command == "standard-webhooks":
            return standard_webhooks.remote(args, RemoteStandardWebhooks(client))
        return dead_letters.run(args, RemoteDeadLetters(client))
    except CommandError as error:
        cause = error.__cause__
        if isinstance(cause, AdminError) and cause.code in REFUSED_KEY_CODES:
            raise CommandError(f"{error} ({_which_key(key, url)})") from cause
        raise
    except AdminError as error:
        if error.code in REFUSED_KEY_CODES:
            raise CommandError(f"{error} ({_which_key(key, url)})") from error
        raise


def _key(args: argparse.Namespace, configured: Mapping[str, str], data_dir: Path) -> KnownKey:
    if args.access_key_id and args.access_key_secret:
        return KnownKey(args.access_key_id, args.access_key_secret, "--access-key-id")
    generated = stored_credentials(data_dir) if data_dir.is_dir() else None
    found = known_keys(configured, generated, data_dir)
    if not found:
        raise CommandError(
            "no access key: pass --access-key-id and --access-key-secret "
            "(or set MNS_GATEWAY_ACCESS_KEY_ID and MNS_GATEWAY_ACCESS_KEY_SECRET)"
        )
    return found[0]


def _which_key(key: KnownKey, url: str) -> str:
    return (
        f"signed with access key {key.access_key_id} from {key.source}; "
        f"`mns-gateway credentials show --url {url}` says which keys that gateway accepts"
    )


def add_command(commands: Commands) -> None:
    parser = commands.add_parser(
        "admin",
        help="the dead-letter and delivery-replay commands against a gateway elsewhere, "
        "through /admin/",
    )
    parser.add_argument("--url", help="the gateway's URL (default MNS_GATEWAY_PUBLIC_URL)")
    parser.add_argument(
        "--access-key-id",
        help="the access key to sign with (default MNS_GATEWAY_ACCESS_KEY_ID, else the pair "
        "generated in the data dir)",
    )
    parser.add_argument(
        "--access-key-secret", help="its secret (default MNS_GATEWAY_ACCESS_KEY_SECRET)"
    )
    parser.add_argument("--data-dir", help="where a generated pair is looked for")
    actions = parser.add_subparsers(dest="admin_command", required=True, metavar="GROUP")
    remote = actions.add_parser("dead-letters", help="as `mns-gateway dead-letters`")
    dead_letters.add_arguments(remote)
    replays = actions.add_parser("deliveries", help="as `mns-gateway deliveries`")
    deliveries.add_arguments(replays)
    webhooks = actions.add_parser(
        "standard-webhooks", help="as `mns-gateway subscriptions standard-webhooks`"
    )
    standard_webhooks.add_arguments(webhooks)
    parser.set_defaults(handler=admin)
