"""Decode stage (spec 01): Responses API item → tool call → typed arguments, with serde_json's exact texts."""
