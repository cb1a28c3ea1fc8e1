"""Jobs, roles, topology, and the filter and score decisions of the scheduler extender.

Pure core: no I/O, no clock, no logging. See docs/locality.md.
"""
