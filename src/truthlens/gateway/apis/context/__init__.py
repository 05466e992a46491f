"""Context wherever applications put it: the retrieved passages a RAG framework's default prompt
template (LangChain, LlamaIndex, Haystack), a common plain layout or the application's own
template writes into a user or system message, read back as passages and a question. Each API's
translator (chat, Responses) hands its messages to :func:`~truthlens.gateway.apis.context.reading.recognise`;
the request itself is never changed."""
