"""The router's runtime: threads, environments, classic and unified execution, the orchestrator.

Unlike the pipeline stages next to it, this package does I/O (asyncio, processes, gRPC
clients); it consumes their frozen outputs and never feeds anything back into them.
"""
