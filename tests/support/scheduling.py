"""How pytest-xdist hands tests to its workers (``.venv/bin/pytest -n 4``).

A test module goes whole to one worker, so that a module-scoped gateway starts once rather than
once on each worker its tests would be spread over; and every test of tests/gateway/pipeline (the
``spark`` fixture's home, tests/gateway/pipeline/conftest.py) goes to the same worker, so that
the suite starts one local Spark session, not one per worker: four sessions on a 2-core machine
time out and leave py4j's connections unusable.

``--dist loadgroup`` with ``xdist_group`` marks would say the same, but with pytest 9 it groups
nothing: pytest-xdist 3.8 renames a grouped test's ``_nodeid``, which pytest 9 no longer reads.
"""

from __future__ import annotations

from xdist.scheduler import LoadScopeScheduling

SPARK_TESTS = "tests/gateway/pipeline/"


class ModulesAndSpark(LoadScopeScheduling):
    def _split_scope(self, nodeid: str) -> str:
        module = nodeid.split("::", 1)[0]
        return "spark" if module.startswith(SPARK_TESTS) else module
