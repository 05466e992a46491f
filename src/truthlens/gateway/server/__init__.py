"""The processor as a process: grpc.aio lifecycle, worker processes, graceful drain, and the
``ExternalProcessor/Process`` servicer that runs one exchange per call. The top layer: it imports
the exchange, policy and core layers; nothing imports it but the CLI."""
