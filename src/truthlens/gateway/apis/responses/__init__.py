"""The Responses API (``POST /v1/responses``): the JSON body codec, the SSE stream codec, and what a
client renders of a stream."""
