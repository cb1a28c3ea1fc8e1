"""The forecasters, pure: the seasonal baselines, Holt-Winters, the conditional and
transformer models, quantiles, the cold-start ladder, the fallback and the stabilizer,
and the registry that names them. Plain arrays in, forecasts out: no I/O, no clock."""
