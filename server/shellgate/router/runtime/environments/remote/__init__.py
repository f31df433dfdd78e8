"""Remote environments: exec-server daemons reached over gRPC, configured or discovered through DNS."""
