"""``python -m gateway.cli``: the same as the mns-gateway command."""

import sys

from gateway.cli.commands import main

sys.exit(main())
