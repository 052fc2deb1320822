"""Wake-ups between processes: the notifier seam, over a socket (SQLite) or LISTEN/NOTIFY."""
