"""Database backends: the Database seam, SQLite (group commit), PostgreSQL, in memory."""
