"""The test suite's toolbox: what more than one test package uses, written once.

* :mod:`tests.support.markers` marks each test with what it needs (a process, PostgreSQL,
  Spark, a browser, Node, PHP), from the fixtures and code it uses;
* :mod:`tests.support.clock` is the settable clock;
* :mod:`tests.support.in_one_process` runs many ``mns-gateway`` refusals in one child process;
* :mod:`tests.support.xdist` makes the session-end reports work under pytest-xdist.
"""
