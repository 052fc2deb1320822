"""``spark-submit gateway/pipeline/job.py --logs DIR --out DIR``: the report as a Spark job.

spark-submit runs this file as a script, so ``gateway`` is importable only if the package is
installed where the driver runs or shipped with ``--py-files``. When neither is the case and the
script sits in a source checkout, the checkout root is put on ``sys.path`` so the command in
docs/pipeline.md works from a clone without installing anything. The script's own directory,
which Python puts first on ``sys.path``, is removed: modules there must not shadow the standard
library or be imported a second time under a top-level name.
"""

from __future__ import annotations

import importlib.util
import logging
import sys
from pathlib import Path


def _make_gateway_importable() -> None:
    here = Path(__file__).resolve().parent
    sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != here]
    if importlib.util.find_spec("gateway") is None:
        sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


if __name__ == "__main__":
    _make_gateway_importable()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    from gateway.pipeline.report import main

    sys.exit(main())
