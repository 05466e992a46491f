"""The legacy completions API (``POST /v1/completions``): request and response bodies, streams."""
