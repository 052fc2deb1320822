"""The account: its attributes (LoggingBucket, TraceEnabled) and their XML."""
