"""A short answer judged by its question: what the question asks for (its focus and the kind of
thing it asks), what the context calls each name, and which name holds the focus
(:mod:`.focus`, the entry point :func:`.focus.off_focus_names`)."""
