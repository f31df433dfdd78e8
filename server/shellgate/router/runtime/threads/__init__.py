"""Threads: the registry, per-thread state, unified-exec sessions (local and shared), counts and the idle sweeper."""
