import time
import logging

log = logging.getLogger(__name__)


def retry_with_backoff(fn, attempts=3, base_delay=0.5):
    """Call fn, retrying with exponential backoff on any exception."""
    for attempt in range(attempts):
        try:
            return fn()
        except Exception:
            log.warning("attempt %d failed", attempt)
            time.sleep(base_delay * 2**attempt)
    return fn()
