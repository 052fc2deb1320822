"""DataFrame comparison for the pipeline tests, with pandas imported only where they run."""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame


def assert_frames_equal(actual: DataFrame, expected: DataFrame, **options: Any) -> None:
    """``pyspark.testing.assertDataFrameEqual``. It is imported at the first comparison because
    it imports pandas (0.7 s of CPU): at module level, each xdist worker paid that to collect
    these modules, though one worker runs them all (tests/support/scheduling.py)."""
    from pyspark.testing import assertDataFrameEqual

    assertDataFrameEqual(actual, expected, **options)
