"""Why a chart could not be had or rendered: one message, said once per HelmChart."""

from __future__ import annotations

from gitfleet.errors import InputError


class ChartError(InputError):
    """A chart that cannot be resolved, fetched, verified or rendered (the message never
    carries credentials)."""
