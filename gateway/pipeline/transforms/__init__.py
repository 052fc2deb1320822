"""Pure DataFrame -> DataFrame steps of the delivery report; no reads, writes or actions here.

Every function takes and returns lazy DataFrames, so the report runs them as one Spark plan per
output and the tests can feed each a handful of rows with a known answer. Column names of the
normalised events are in :data:`gateway.pipeline.schema.COLUMN_FOR_FIELD`.

:mod:`.parsing` types, filters and windows the input and traces single messages,
:mod:`.deliveries` builds the topic side's tables, :mod:`.queues` the queue side's, and
:mod:`.columns` holds the column predicates they share. Callers import the submodules.
"""
