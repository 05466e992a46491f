"""What a route wants done with an exchange: the config (schema, snapshot, hot reload), the
decision rules, running the route's mode, and the one decision of what the client sees. Imports
the apis (to read their typed interface) and core; never an exchange or protobuf."""
