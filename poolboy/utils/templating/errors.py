"""The one error of templating: a template could not be rendered or evaluated."""

from __future__ import annotations


class TemplateError(Exception):
    """A template could not be rendered or evaluated; the message names the template and the cause.

    ``cause`` is the text of the underlying exception alone (e.g. ``division by zero``): the spec's exact messages
    for failing checks embed only that text, as upstream Poolboy does (:func:`error_text`).
    """

    def __init__(self, message: str, template: str | None = None, cause: str | None = None) -> None:
        super().__init__(message)
        self.template = template
        self.cause = cause


def error_text(error: BaseException) -> str:
    """The text a user-facing "failed with exception: <text>" message embeds: the underlying exception's own."""
    cause = getattr(error, "cause", None) if isinstance(error, TemplateError) else None
    return cause if cause else str(error)
