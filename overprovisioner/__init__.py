"""Placeholder plans sized to the forecast, their apply loop, and the cluster simulator."""
