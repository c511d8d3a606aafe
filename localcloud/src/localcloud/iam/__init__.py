"""IAM for the local cloud: who calls, what applies, what AWS would answer."""
