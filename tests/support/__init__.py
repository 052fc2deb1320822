"""The test suite's toolbox: what more than one test package uses, written once.

* :mod:`tests.support.markers` marks each test with what it needs (a process, PostgreSQL,
  Spark, a browser, Node, PHP), from the fixtures and code it uses;
* :mod:`tests.support.clock` is the settable clock;
* :mod:`tests.support.xdist` makes the session-end reports work under pytest-xdist.
"""
