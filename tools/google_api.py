"""What the two catalog refresh tools (``refresh_prices.py``, ``refresh_hardware.py``) share:
GETs on Google Cloud REST APIs with Application Default Credentials, their pages, and the
command that rewrites a shipped JSON catalog or leaves it as it was. google-auth is imported
only when a refresh runs. Run from the repository's root: ``.venv/bin/python -m tools.<tool>``."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

Fetch = Callable[[str, Mapping[str, str]], Mapping[str, Any]]
"""GET ``url`` with query ``params``; the decoded JSON body."""


class RefreshError(RuntimeError):
    """The catalog could not be refreshed; its file was left as it was."""


def authorized_fetch(scope: str) -> tuple[Fetch, str | None]:
    """GETs with Application Default Credentials for ``scope``, and their project;
    RefreshError when there are none or a GET fails."""
    import google.auth
    from google.auth.exceptions import DefaultCredentialsError
    from google.auth.transport.requests import AuthorizedSession

    try:
        credentials, project = google.auth.default(scopes=[scope])
    except DefaultCredentialsError as missing:
        raise RefreshError(
            "no Google credentials: run `gcloud auth application-default login` or set "
            f"GOOGLE_APPLICATION_CREDENTIALS, then try again ({missing})"
        ) from None
    session = AuthorizedSession(credentials)

    def fetch(url: str, params: Mapping[str, str]) -> Mapping[str, Any]:
        response = session.get(url, params=dict(params), timeout=60)
        if response.status_code != 200:
            raise RefreshError(f"GET {url}: HTTP {response.status_code}: {response.text[:500]}")
        body: Mapping[str, Any] = response.json()
        return body

    return fetch, project


def pages(fetch: Fetch, url: str, params: Mapping[str, str]) -> Iterator[Mapping[str, Any]]:
    """Every page of a list call, following ``nextPageToken``."""
    token = ""
    while True:
        page = fetch(url, {**params, **({"pageToken": token} if token else {})})
        yield page
        token = str(page.get("nextPageToken") or "")
        if not token:
            return


def run_refresh(
    argv: list[str] | None,
    description: str | None,
    output: Path,
    refresh: Callable[[argparse.Namespace, Any], tuple[Any, Sequence[str]]],
    *,
    indent: int,
    project: bool = False,
) -> int:
    """A refresh tool's command line (``--output``, ``--dry-run``, and ``--project`` when
    ``project``): ``refresh(args, document)`` gives the new document of the JSON file at
    ``--output`` and the lines that report it, printed; the document is written unless
    ``--dry-run``. A RefreshError, a ``ValueError`` or an ``OSError`` leaves the file as it
    was, says so on stderr and exits 2."""
    parser = argparse.ArgumentParser(description=description)
    if project:
        parser.add_argument("--project", help="project whose view to read (default: ADC's)")
    parser.add_argument("--output", type=Path, default=output)
    parser.add_argument("--dry-run", action="store_true", help="report, write nothing")
    args = parser.parse_args(argv)
    try:
        document, report = refresh(args, json.loads(args.output.read_text(encoding="utf-8")))
    except (RefreshError, ValueError, OSError) as failure:
        print(f"error: {failure}; {args.output} is unchanged", file=sys.stderr)
        return 2
    for line in report:
        print(line)
    if not args.dry_run:
        args.output.write_text(json.dumps(document, indent=indent) + "\n", encoding="utf-8")
        print(f"wrote {args.output}")
    return 0
