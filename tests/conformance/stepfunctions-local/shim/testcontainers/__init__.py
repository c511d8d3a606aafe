"""Stand-in for the ``testcontainers`` package, for published Step Functions Local suites.

``DockerContainer("amazon/aws-stepfunctions-local")`` here starts no container: ``start()``
starts the local cloud (``LOCALCLOUD_UP``: the command line, JSON list) on a free port, with
``SFN_MOCK_CONFIG`` mapped from the container path back to the host file the suite mounted.
``get_container_host_ip()``/``get_exposed_port(8083)`` then name that endpoint: the suite's
code is unchanged, only the endpoint it reaches differs.
"""
