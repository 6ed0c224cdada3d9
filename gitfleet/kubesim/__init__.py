"""kubesim: an embedded Kubernetes API server on loopback for the demo and the tests."""
