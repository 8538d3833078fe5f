"""The one family of errors tfyarn's client raises for people to act on.

Every error a user can fix (bad job files, an unusable env or work dir, a cluster that
cannot run the job, YARN refusing it, the local cluster not starting, ...) is a
`TfyarnError`: a message saying what is wrong and, where one is known, a hint saying how to
fix it. Library users catch `TfyarnError`; the CLI turns it into click's ``Error: ...`` in
one place (tfyarn/cli/main.py). Anything else that escapes is a bug and keeps its traceback.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

NOTHING_SUBMITTED = "nothing was submitted"


class TfyarnError(Exception):
    """What went wrong (``message``) and how to fix it (``hint``, or None).

    ``context`` is what the failure meant for the user's request (e.g. "nothing was
    submitted"); the code that knows it sets it (`in_context`), and `describe` puts it first.
    """

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.context: str | None = None

    def __str__(self) -> str:
        if self.hint is None:
            return self.message
        # the message is a sentence, ended before its fix (YARN's own words often are not)
        ended = self.message.rstrip()
        ended += "" if ended.endswith((".", "!", "?", ":")) else "."
        return f"{ended} Fix: {self.hint}"

    def describe(self) -> str:
        """The whole text for a person: the context, then the message and its fix."""
        return str(self) if self.context is None else f"{self.context}:\n{self}"


@contextmanager
def in_context(context: str) -> Iterator[None]:
    """Any TfyarnError raised inside says ``context`` (unless an inner block said one)."""
    try:
        yield
    except TfyarnError as exc:
        if exc.context is None:
            exc.context = context
        raise
