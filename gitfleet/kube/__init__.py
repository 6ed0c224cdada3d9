"""The only package that talks to a Kubernetes API (through the official `kubernetes` client)."""
