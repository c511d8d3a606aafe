"""The published suites' own test files are driven by test_stepfunctions_local_suites.py (with
the shim of shim/), never collected directly: they expect a Step Functions Local container."""

collect_ignore_glob = ["*/tests/*", "shim/*"]
