"""How the pipeline tests start Spark's JVM: for short runs on a 2-core machine shared with the
rest of the suite (docs/testing.md#the-whole-suite-in-parallel). The options change neither
what Spark computes nor how: the JVM's compilers, collector and code cache, and the order of
its class path."""

from __future__ import annotations

from pathlib import Path
from typing import Final

import pyspark

#: C1 only and the serial collector: the C2 compiler's and the parallel collector's threads
#: took CPU the other test workers need (JVM CPU per report run 9.5-12.2 s against 14.1-18.0 s,
#: wall time unchanged, 2026-11-27). C1 alone reserves a code cache of 48 MB, not 240: the
#: shared session filled it in two minutes, the JVM then stopped compiling, and once failed a
#: test ("Out of space in CodeCache for adapters", 2026-12-02), hence the larger cache.
OPTIONS: Final = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:ReservedCodeCacheSize=256m"


def jars_first() -> str:
    """Spark's core, its SQL engine and Scala's library, for the front of the class path
    (``spark.driver.extraClassPath``): Spark looks up the class file of every closure it
    cleans, and the JVM searches the class path's 280 jars in order for each, alphabetically,
    where spark-core comes late. 14 % less JVM CPU on the same 64 tests (245 against 286 s,
    2026-12-02)."""
    jars = Path(pyspark.__file__).parent / "jars"
    prefixes = ("spark-core", "spark-sql", "spark-catalyst", "spark-unsafe", "spark-common")
    return ":".join(
        sorted(
            str(jar)
            for jar in jars.glob("*.jar")
            if jar.name.startswith((*prefixes, "scala-library", "scala-reflect"))
        )
    )
