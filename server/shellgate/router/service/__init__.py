"""The router as a service: configuration, the application object, the gRPC server, metrics, rules on disk."""
