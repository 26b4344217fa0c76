"""Hiding credentials in any text that leaves the process: API answers, MQTT payloads, logs, errors.

There is one masking function so that every exit hides the same things the same way; a second,
slightly different one is how half a password ends up in a log.

What counts as a credential:

* URL userinfo, up to the *last* ``@`` before the query: passwords may contain ``@`` and ``/``
  unencoded, and hiding too much of a URL is harmless while showing a piece of a password is not.
  ``user:secret@`` keeps the user name; a lone ``name@`` may itself be a token and is hidden whole.
* ``name=value`` pairs whose name contains pass, pwd, pw, token, key, secret or auth (URL query
  parameters, and GStreamer properties such as ``user-pw=`` inside ``gst:`` pipelines).
"""
from __future__ import annotations

import logging
import re
from typing import Dict, Optional

MASK = "***"

# Text that cannot be inside a URL as written in a config file, a pipeline or a log line.
_URL_STOP = r"\s?#\"'<>"
_USERINFO = re.compile(rf"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^{_URL_STOP}]*)@")
_SECRET_PAIR = re.compile(
    r"(?<![A-Za-z0-9_.\-])"
    r"(?P<name>[A-Za-z0-9_.\-]*(?:pass|pwd|pw|token|key|secret|auth)[A-Za-z0-9_.\-]*)"
    r"=(?P<value>\"[^\"]*\"|'[^']*'|[^&\s#;'\"]+)",
    re.IGNORECASE,
)


def _mask_userinfo(match: "re.Match[str]") -> str:
    userinfo = match.group("userinfo")
    user, colon, _password = userinfo.partition(":")
    shown = f"{user}:{MASK}" if colon and user and user != MASK else MASK
    return f"{match.group('scheme')}{shown}@"


def _mask_pair(match: "re.Match[str]") -> str:
    return f"{match.group('name')}={MASK}"


def mask_secrets(text: str) -> str:
    """``text`` with URL userinfo and secret-looking ``name=value`` pairs replaced by ``***``.

    Idempotent: masking masked text changes nothing, so masked values compare equal.
    """
    if not text:
        return text
    return _SECRET_PAIR.sub(_mask_pair, _USERINFO.sub(_mask_userinfo, text))


class SecretMaskingFilter(logging.Filter):
    """A logging filter that masks the formatted message and any traceback of a record.

    Installed on handlers (a filter on a logger does not see records of its child loggers).
    """

    _traceback_formatter = logging.Formatter()

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        masked = mask_secrets(message)
        if masked != message:
            record.msg, record.args = masked, ()
        if record.exc_info and not record.exc_text:
            record.exc_text = self._traceback_formatter.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = mask_secrets(record.exc_text)
        return True


def install_log_masking(logger: logging.Logger) -> None:
    """Add the masking filter to every handler of ``logger`` (once)."""
    for handler in logger.handlers:
        if not any(isinstance(f, SecretMaskingFilter) for f in handler.filters):
            handler.addFilter(SecretMaskingFilter())


def unmask(masked: str, original: str) -> Optional[str]:
    """``masked`` with its ``***`` parts filled in from ``original``, or None when that is not possible.

    A client that only ever saw masked values sends them back; this recovers the secrets it could
    not see. It succeeds only when every ``***`` has a counterpart in ``original`` (the userinfo of
    the URL, a ``name=value`` pair of the same name) and the result, masked, is exactly what the
    client sent: the client may change what it can see, never what it cannot.
    """
    if MASK not in masked:
        return masked
    if mask_secrets(original) == masked:
        return original
    candidate = masked
    new_url, old_url = _USERINFO.search(candidate), _USERINFO.search(original)
    if new_url and MASK in new_url.group("userinfo"):
        if old_url is None:
            return None
        start, end = new_url.span("userinfo")
        candidate = candidate[:start] + old_url.group("userinfo") + candidate[end:]
    old_pairs: Dict[str, Optional[str]] = {}
    for pair in _SECRET_PAIR.finditer(original):
        name, value = pair.group("name"), pair.group("value")
        # The same name with two values (two elements of a pipeline): which one is meant is unknown.
        old_pairs[name] = value if old_pairs.get(name, value) == value else None

    def _fill(match: "re.Match[str]") -> str:
        name = match.group("name")
        if match.group("value") == MASK and old_pairs.get(name) is not None:
            return f"{name}={old_pairs[name]}"
        return match.group(0)

    candidate = _SECRET_PAIR.sub(_fill, candidate)
    if MASK in candidate or mask_secrets(candidate) != mask_secrets(masked):
        return None
    return candidate
