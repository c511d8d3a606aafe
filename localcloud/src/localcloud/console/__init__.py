"""The local console's data layer: JSON for a browser page like the Step Functions console.

graph.py draws a definition, data.py reads state machines and executions from a running
LocalCloud (through its AWS APIs, as the console would), routes.py serves them under
``/_localcloud/console/api/`` (server.py dispatches there). Generic: any SAM template's state
machines, nothing of the application.
"""
