"""What operators do through the admin API and the CLI alike (dead letters)."""
