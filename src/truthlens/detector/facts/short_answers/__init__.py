"""A short answer judged by its question: what the question asks for (its focus and the kind of
thing it asks), what the context calls each name, and which name holds the focus
(:mod:`.focus`, the entry point :func:`.focus.off_focus_names`); a small learned fit of each of the
context's names to the question (:mod:`.answer_fit`, read through :func:`.focus.fit_reading`)."""
