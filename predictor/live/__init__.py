"""The predictor's adapters to the world: the live recorder and the known-demand reader
(Kubernetes), the SQLite history store, Prometheus, series and model files.

Each builds on the pure folders (`models`, `backtest`, `history`, `known`); none of
those imports this one.
"""
