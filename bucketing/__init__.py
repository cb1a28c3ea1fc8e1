"""Resources, instance types and the embedding of demand into instance buckets.

It imports only `common` and `jobtraces` (the job table it embeds); locality, predictor
and the services build on it.
"""
