"""The dynamic metadata by which the processor moves an exchange it will not check onto the
route without the unchecked mark.

Envoy's routes for checked decisions add the unchecked mark (``x-truthlens-detected:
unavailable``) to every answer, for the processor to replace when it sees the answer. An
exchange the processor knows at its request headers it will not check (no decision, or
detection off) need not be seen again: the reply to its request headers sets
``{NAMESPACE: {UNCHECKED_KEY: true}}`` and asks Envoy to pick the route again, and the first
route of the generated and shipped route tables, matched on that metadata only, carries no mark.
The answer then passes Envoy as it would alone: headers, framing and every byte as they come,
with nothing held at the processor (an upstream that closes right after a short body still
delivers it). Clients cannot set dynamic metadata, so no request can take that route by itself.
"""

from __future__ import annotations

NAMESPACE = "truthlens"  # the ext_proc filter's metadata_options.receiving_namespaces must list it
UNCHECKED_KEY = "unchecked"
