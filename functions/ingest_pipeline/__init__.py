"""S3 ingestion pipeline: the code of every Lambda function (one package, thin handlers).

Layout (as in aws-lambda-handler-cookbook):
- ``handlers/``: one thin module per Lambda; parses its input and calls domain logic.
- ``logic/``: pure domain functions (contracts, CSV conversion, error classification).
- ``dal/``: AWS access adapters (S3), with AWS errors mapped to ``errors``.
- ``errors``: the error taxonomy shared with the state machine's ErrorEquals.
"""

__version__ = "0.1.0"
