"""gRPC helpers both daemons use: the request-decoding guard, the health listener, hand-encoded output events."""
