"""The local console: JSON for a browser page like the Step Functions console (routes.py),
generic: any SAM template's state machines, nothing of the application."""
