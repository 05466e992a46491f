"""Thin per-phase orchestration of one ext_proc exchange (request/response headers and bodies)."""
