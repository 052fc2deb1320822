"""The account's attributes, kept in the database so that every replica returns the same ones."""

from __future__ import annotations

from collections.abc import Callable

from gateway.account.attributes import AccountAttributes
from gateway.store.backends.database import Database
from gateway.store.shared import SharedSettings

#: The shared setting holding the attributes (JSON).
ACCOUNT_ATTRIBUTES_NAME = "account_attributes"


class AccountStore:
    def __init__(self, database: Database) -> None:
        self.settings = SharedSettings(database)

    def attributes(self) -> AccountAttributes:
        return AccountAttributes.from_json(self.settings.get(ACCOUNT_ATTRIBUTES_NAME))

    def change(self, apply: Callable[[AccountAttributes], AccountAttributes]) -> AccountAttributes:
        """Replace the attributes with ``apply(current)``, atomically; the new attributes."""
        text = self.settings.update(
            ACCOUNT_ATTRIBUTES_NAME,
            lambda stored: apply(AccountAttributes.from_json(stored)).to_json(),
        )
        return AccountAttributes.from_json(text)
