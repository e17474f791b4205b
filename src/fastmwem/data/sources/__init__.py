"""Sources of private data for releases: in memory, DuckDB, Spark (see ``open_source``)."""
