"""Forecasting models (long-term multivariate forecasting, iTransformer protocol)."""
