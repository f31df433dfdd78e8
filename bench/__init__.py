"""shellgate benchmarks: every number side by side with its anchor, measured in the same run."""
