"""Demand history, forecasters that give quantiles, and their backtest."""
