"""The APIs an exchange speaks, as bytes: chat completions and the Responses API, each a body
codec and a stream codec behind the one typed interface (:mod:`~truthlens.gateway.apis.interface`),
and SSE framing. Imports only core: no policy, no config, no protobuf."""
