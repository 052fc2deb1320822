"""SQL statements: functions of a Connection (connection), written once for every backend."""
