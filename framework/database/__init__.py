"""PostgreSQL: the shared stores of several replicas (see docs/deployment.md)."""
