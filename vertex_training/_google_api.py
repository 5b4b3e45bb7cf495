"""GETs on Google Cloud REST APIs with Application Default Credentials: what the two
catalog refresh tools (prices, hardware availability) share. google-auth is imported only
when a refresh runs."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["Fetch", "authorized_fetch", "rewrite_json"]

Fetch = Callable[[str, Mapping[str, str]], Mapping[str, Any]]
"""GET ``url`` with query ``params``; the decoded JSON body."""


def authorized_fetch(scope: str, error: type[Exception]) -> tuple[Fetch, str | None]:
    """GETs with Application Default Credentials for ``scope``, and their project; the
    caller's ``error`` when there are none or a GET fails."""
    import google.auth
    from google.auth.exceptions import DefaultCredentialsError
    from google.auth.transport.requests import AuthorizedSession

    try:
        credentials, project = google.auth.default(scopes=[scope])
    except DefaultCredentialsError as missing:
        raise error(
            "no Google credentials: run `gcloud auth application-default login` or set "
            f"GOOGLE_APPLICATION_CREDENTIALS, then try again ({missing})"
        ) from None
    session = AuthorizedSession(credentials)

    def fetch(url: str, params: Mapping[str, str]) -> Mapping[str, Any]:
        response = session.get(url, params=dict(params), timeout=60)
        if response.status_code != 200:
            raise error(f"GET {url}: HTTP {response.status_code}: {response.text[:500]}")
        body: Mapping[str, Any] = response.json()
        return body

    return fetch, project


def rewrite_json(
    output: Path,
    refresh: Callable[[Any], tuple[Any, Sequence[str]]],
    *,
    error: type[Exception],
    indent: int,
    dry_run: bool,
) -> int:
    """A refresh tool's run on the JSON document at ``output``: ``refresh`` gives the new
    document and the lines that report it, printed; the document is written unless
    ``dry_run``. The caller's ``error``, a ``ValueError`` or an ``OSError`` leaves ``output``
    as it was, says so on stderr and exits 2."""
    try:
        document, report = refresh(json.loads(output.read_text(encoding="utf-8")))
    except (error, ValueError, OSError) as failure:
        print(f"error: {failure}; {output} is unchanged", file=sys.stderr)
        return 2
    for line in report:
        print(line)
    if not dry_run:
        output.write_text(json.dumps(document, indent=indent) + "\n", encoding="utf-8")
        print(f"wrote {output}")
    return 0
