"""The MNS wire protocol: what every request, response and push says, whoever sends it."""

from typing import Final

#: The API version every request, response and push names in ``x-mns-version``.
MNS_VERSION: Final = "2015-06-06"
