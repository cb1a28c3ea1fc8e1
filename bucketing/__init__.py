"""Resources, instance types, job tables and the embedding of demand into instance buckets.

It imports only `common`; locality, predictor and the services build on it.
"""
