"""Model-facing output (spec 05): truncation, texts, head/tail capture, unified-exec rules."""
