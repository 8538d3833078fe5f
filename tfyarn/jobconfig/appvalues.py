"""appConfig's values checked by their kind (text, seconds, an access list, ...), with the
bounds and examples their declarations give: the checks several settings share."""

from __future__ import annotations

import re
from typing import Any

from appmaster.common.settings import Setting, setting
from tfyarn.jobconfig.documents import Checker, Found, as_int, as_seconds, key_path

_ACL_NAME = re.compile(r"[^\s,]+")


def by_kind(c: Checker, settings: dict[str, Any], s: Setting) -> Any:
    """A setting declared without a field of its own (or a choice), checked by its kind
    alone; its declaration's default where the files give none or a wrong value."""
    if s.kind == "seconds":
        return seconds(c, settings, s.key)
    if s.kind == "text":
        return text(c, settings, s.key, s.example) or s.default
    if s.key not in settings:
        return s.default
    value, where = settings[s.key], key_path("global", s.key)
    if s.kind == "whole":
        number = as_int(value)
        if not (refusal := s.refusal(number)):
            return number
        c.add(where, refusal, f'give {s.noun or "a number"}, e.g. "{s.example}"{s.note}.',
              value=value)
    elif s.kind == "choice":
        return choice(c, s, (value, where)) or s.default
    elif s.kind == "list":
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return tuple(value)
        c.add(where, "must be a list of strings", f"write e.g. {s.example or '[]'}.",
              value=value)
    else:
        raise TypeError(f"{s.key}: a {s.kind} setting needs a field and a check of its own")
    return s.default


def choice(c: Checker, s: Setting, found: Found) -> str | None:
    """One of the declaration's choices (a policy, a framework); its default when absent,
    None when wrong."""
    if found is None:
        return s.default
    value, where = found
    if refusal := s.refusal(value):
        c.add(where, refusal, f'write e.g. "{s.default or s.choices[0]}".', value=value)
        return None
    return value


def positive_seconds(c: Checker, s: Setting, found: Found) -> float | None:
    """A positive number of seconds (a number or a numeric string); the declaration's
    default when absent, None when wrong."""
    if found is None:
        return s.default
    value, where = found
    number = as_seconds(value)
    if refusal := s.refusal(number):
        c.add(where, refusal, f'give seconds, e.g. "{s.example}", or remove the key.',
              value=value)
        return None
    return number


def text(c: Checker, settings: dict[str, Any], key: str, example: str) -> str | None:
    """A non-empty string setting, stripped; None when absent or wrong."""
    if key not in settings:
        return None
    value = settings[key]
    if not isinstance(value, str) or not value.strip():
        message = "must not be empty" if isinstance(value, str) else "must be a string"
        fix = f'give a value such as "{example}", or remove the key.'
        c.add(key_path("global", key), message, fix, value=value)
        return None
    return value.strip()


def acl(c: Checker, settings: dict[str, Any], key: str) -> str | None:
    """A YARN access control list as YARN writes it: users, a space, groups."""
    if key not in settings:
        return None
    value = settings[key]
    parts = value.split(" ") if isinstance(value, str) else []
    names = [name for part in parts for name in part.split(",") if part]
    if not value or not parts or len(parts) > 2 or not names or not all(
            _ACL_NAME.fullmatch(name) for name in names):
        c.add(key_path("global", key), 'must be a YARN access list, "users groups"',
              'write e.g. "alice,bob ml-team" (users, one space, groups; no other spaces), '
              '" ml-team" for groups only, or "*" for everyone; the owner and YARN\'s admins '
              "always have access.", value=value)
        return None
    return value


def seconds(c: Checker, settings: dict[str, Any], key: str) -> float | None:
    """appConfig's positive number of seconds, or the built-in default."""
    s = setting(key)
    found = (settings[key], key_path("global", key)) if key in settings else None
    number = positive_seconds(c, s, found)
    return s.default if number is None else number
