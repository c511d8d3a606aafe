"""Processors a dataset's contract may name (``"processor": "<module>"``): each module has a
``process(record)`` function (``ingest_pipeline.logic.processing``, docs/your-own-processing.md)."""
