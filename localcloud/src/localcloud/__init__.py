"""The local cloud: moto plus the hooks that make it run this project's template like AWS."""
