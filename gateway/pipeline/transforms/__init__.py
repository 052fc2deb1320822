"""Pure DataFrame -> DataFrame steps of the delivery report; no reads, writes or actions here.

Every function takes and returns lazy DataFrames, so the report runs them as one Spark plan per
output and the tests can feed each a handful of rows with a known answer. Column names of the
normalised events are in :data:`gateway.pipeline.schema.COLUMN_FOR_FIELD`.

:mod:`.parsing` types, filters and windows the input and traces single messages;
:mod:`.facts` turns it into per-message facts and merges them; :mod:`.homes` says which log
partition's partial summaries a message counts in; :mod:`.deliveries` and :mod:`.queues` give
each message's deliveries and queue lifecycle; :mod:`.partials` sums those up per home, with
latency :mod:`.histograms`; :mod:`.tables` and :mod:`.attention` sum the partials of all homes
into the report's tables and the messages the page traces; :mod:`.columns` holds the column
helpers they share. Callers import the submodules.
"""
