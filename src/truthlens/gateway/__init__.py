"""The gateway: gRPC ext_proc server, per-exchange stream state machine, phases, config.

Kept import-light: importing ``truthlens.gateway`` loads neither gRPC nor a model.
"""
