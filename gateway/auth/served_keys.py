"""Which access keys a gateway serves with, as the shell's commands can learn it.

A gateway started with ``MNS_GATEWAY_ACCESS_KEY_ID=my-key`` accepts ``my-key`` only, while a
shell without that export sees the pair generated in the data dir: ``credentials show`` and
``admin`` must not present that pair as the gateway's. ``serve`` records in the data dir the URL
and the key *ids* it serves with (never a secret that was not already stored there), and the
commands compare: the keys they know (environment, generated pair) against what the gateway
says it accepts, by signing a request with each (:func:`gateway.cli.credentials`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

#: In the data dir, written by ``mns-gateway serve`` at start-up.
SERVED_KEYS_FILE = "served-keys.json"


@dataclass(frozen=True, slots=True)
class ServedKeys:
    url: str
    access_key_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class KnownKey:
    """An access key pair this shell knows, and where from."""

    access_key_id: str
    access_key_secret: str
    source: str


def read_served_keys(data_dir: Path) -> ServedKeys | None:
    path = data_dir / SERVED_KEYS_FILE
    try:
        document = json.loads(path.read_text())
        return ServedKeys(str(document["Url"]), tuple(map(str, document["AccessKeyIds"])))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def record_served_keys(data_dir: Path, url: str, key_ids: Iterable[str]) -> ServedKeys | None:
    """Write what this gateway serves with; return the previous record when its keys differ
    (clients configured for those will now be refused: ``serve`` says so)."""
    previous = read_served_keys(data_dir)
    current = ServedKeys(url, tuple(sorted(key_ids)))
    temporary = data_dir / f".{SERVED_KEYS_FILE}.{os.getpid()}"
    temporary.write_text(json.dumps({"Url": url, "AccessKeyIds": list(current.access_key_ids)}))
    temporary.replace(data_dir / SERVED_KEYS_FILE)
    if previous is not None and set(previous.access_key_ids) != set(current.access_key_ids):
        return previous
    return None


def changed_keys_warning(
    previous: ServedKeys, now: Iterable[str], generated: Mapping[str, str] | None = None
) -> str:
    """One line for ``serve``: the keys clients used last time are not accepted any more.

    When those were the pair generated in the data dir (a first ``serve`` without keys, as the
    README's run command does before its quickstart sets one), nobody chose them: the line says
    so, rather than telling the user to set again what they never set.
    """
    before = ", ".join(previous.access_key_ids)
    current = ", ".join(sorted(now))
    if generated and set(previous.access_key_ids) <= set(generated):
        return (
            f"note: this data dir was last served with its generated access key {before}; now "
            f"with {current} from MNS_GATEWAY_ACCESS_KEY_ID/_ACCESS_KEYS, so clients configured "
            "with the generated pair will be refused until they use the new key"
        )
    return (
        f"warning: this data dir was last served with access key {before}, now with "
        f"{current}: clients configured with {before} (~/.mnscredentials, say) "
        "will be refused; set MNS_GATEWAY_ACCESS_KEY_ID and _SECRET as before to keep them"
    )


def known_keys(
    configured: Mapping[str, str], generated: Mapping[str, str] | None, data_dir: Path
) -> list[KnownKey]:
    """The pairs this shell could sign with: its environment's, then the data dir's generated
    pair (a gateway without configured keys serves with that one)."""
    keys = [KnownKey(k, s, "this shell's environment") for k, s in configured.items()]
    keys += [
        KnownKey(k, s, f"the pair generated in {data_dir}")
        for k, s in (generated or {}).items()
        if k not in configured
    ]
    return keys
