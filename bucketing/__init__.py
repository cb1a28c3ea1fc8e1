"""Resources, instance types, job tables and the embedding of demand into instance buckets.

This package imports nothing else of headstart's: every other package builds on it.
"""
