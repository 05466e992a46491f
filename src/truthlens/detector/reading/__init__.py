"""Reading a request before it is checked: what it asks of its context (:mod:`.requests`)."""
