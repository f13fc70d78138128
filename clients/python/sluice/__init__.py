"""sluice: a Python client for the sluiced concurrency-control service.

Standard library only. See ``README.md`` next to this package for a tour;
the HTTP/JSON API it speaks is described in the project's docs/api.md.

>>> import sluice
>>> client = sluice.Client("http://127.0.0.1:7700")
>>> with client.hold(mutex="deploy", lease="30s") as claim:   # doctest: +SKIP
...     deploy(fencing_token=claim.token)
"""
from .client import (
    BadRequest,
    Claim,
    ClaimEnded,
    Client,
    Conflict,
    NotFound,
    Semaphore,
    SluiceError,
    Timeout,
    TLSError,
    Unauthorized,
    Unavailable,
    parse_duration,
)

__all__ = [
    "BadRequest",
    "Claim",
    "ClaimEnded",
    "Client",
    "Conflict",
    "NotFound",
    "Semaphore",
    "SluiceError",
    "Timeout",
    "TLSError",
    "Unauthorized",
    "Unavailable",
    "parse_duration",
]

__version__ = "0.1.0"
