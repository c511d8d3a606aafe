"""S3 ingestion pipeline: the code of every Lambda function (one package, thin handlers).

Layout (as in aws-lambda-handler-cookbook):
- ``handlers/``: one thin module per Lambda; parses its input and calls domain logic.
- ``logic/``: pure domain functions (contracts, CSV conversion, error classification).
- ``dal/``: AWS access adapters (S3), with AWS errors mapped to ``errors``.
- ``errors``: the error taxonomy shared with the state machine's ErrorEquals.
"""

import gc
import os

__version__ = "0.1.0"

if os.environ.get("_HANDLER", "").startswith(f"{__name__}.handlers."):
    # The runtime is importing one of the handlers (a cold start). What the import makes lives
    # as long as the environment: the collector's passes during it free a few hundred objects
    # and cost 20-40 ms of each cold start (docs/performance.md, Cold start). It is off until
    # the handler's module has loaded (observability.handler_imported freezes what the import
    # made, then turns the collector back on).
    gc.disable()
