"""The local cloud: moto plus the hooks that make it run a SAM template's event graph like AWS."""

from pathlib import Path

# Defaults of the command line and of LocalCloud, here so that `localcloud --help` or a usage
# error need not load moto (localcloud.cloud takes ~2.5 s of CPU to import).
TEMPLATE = Path("template.yaml")  # as sam: the template.yaml of the working directory
STACK_NAME = "local"
