"""Operator tooling for the S3 ingestion pipeline: ingestctl and the local cloud."""
