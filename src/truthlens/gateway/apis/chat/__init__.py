"""Chat completions (``POST /v1/chat/completions``): the JSON body codec and the SSE stream codec."""
