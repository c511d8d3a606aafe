"""Recovery tooling: read dead-lettered failure records and put them back to work."""
