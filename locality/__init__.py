"""Jobs, roles, topology, and the filter and score decisions of the scheduler extender (pure core)."""
