"""Secrets: SOPS + age files (decrypted only on the agent) and redaction of Secret values."""
