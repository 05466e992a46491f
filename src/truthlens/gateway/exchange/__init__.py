"""One ext_proc exchange: the per-stream state machine, which phases it needs, the phases
themselves, the protobuf replies they build, and the long-lived collaborators (detector, LLM
clients) an exchange leases. Imports policy, apis and core; never the server."""
