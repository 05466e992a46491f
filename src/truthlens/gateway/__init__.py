"""The gateway: the gRPC ext_proc server and the HTTP exchange it checks, in layers.

Each folder has one job, and imports run only downwards (a test walks the import graph):

- :mod:`~truthlens.gateway.server`: the process: grpc.aio lifecycle, workers, drain, the
  ``Process`` servicer.
- :mod:`~truthlens.gateway.exchange`: one exchange: the stream state machine, its phase plan, the
  phases, the ext_proc replies they build, and the collaborators an exchange leases.
- :mod:`~truthlens.gateway.envoy`: what ``truthlens envoy-routes`` and ``check-config`` derive from a
  config for Envoy (routes that skip the processor, what a config leaves unchecked).
- :mod:`~truthlens.gateway.policy`: what a route wants: the config, the decision rules, running
  its mode, and what the client sees of the verdict.
- :mod:`~truthlens.gateway.apis`: the two wire formats (chat completions, the Responses API) behind
  one typed interface, and SSE.
- :mod:`~truthlens.gateway.core`: what every layer shares: failure reasons, telemetry, the path rule.

Kept import-light: importing ``truthlens.gateway`` loads neither gRPC nor a model.
"""
