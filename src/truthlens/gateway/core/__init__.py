"""What every gateway layer shares: domain failures and their reason labels, telemetry (every
metric name) and the metrics port, and the one rule by which a request path is read (with its RE2
form for Envoy). Imports nothing else of the gateway."""
