"""Utilities, re-exported for convenience."""
from .retry import retry_with_backoff

__all__ = ["retry_with_backoff"]
