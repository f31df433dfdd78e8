"""Protobuf ↔ domain for ToolRouterService: the servicer, turn, projection and event conversions."""
