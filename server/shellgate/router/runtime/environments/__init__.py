"""Environments: the registry, the spawn seam and remote daemons (gRPC, DNS discovery)."""
