"""A port of serde_json's reading and typed decoding: its error texts and positions, byte for byte."""
