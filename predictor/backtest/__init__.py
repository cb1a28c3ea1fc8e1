"""Scoring forecasters on a history, pure: the rolling-origin backtest and its error
metrics (the plot is `predictor.backtest_plot`, the command `predictor.cli`)."""
