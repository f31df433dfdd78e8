"""Thread state shared between router replicas: the store interface, its Redis implementation, shared sessions."""
