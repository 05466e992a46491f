"""What a config tells Envoy, offline: the routes that skip the processor for detection-off
decisions (``truthlens envoy-routes``) and what a valid config leaves unchecked (``check-config``'s
warnings). Imports policy and core."""
