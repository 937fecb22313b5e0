"""What Flower's pages show, read from their HTML as a person reads them: each table's rows of cell texts.

A table is named by its ``id`` (``tasks-table``, ``workers-table``, ``queue-table``) or else by its caption (the
worker page's ``Processed tasks``). Flower's Tasks and Workers pages fill their tables from XHR calls, so their rows
are in the DOM a browser built (:func:`tests.browser.dump_dom`), not in the HTML Flower sends.
"""

from __future__ import annotations

from html.parser import HTMLParser


class _Tables(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self._open: list[tuple[str | None, list[list[str]]]] = []  # nested tables: (id, rows)
        self._caption: list[str] | None = None
        self._cell: list[str] | None = None
        self._in_body = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self._open.append((dict(attrs).get("id"), []))
        elif not self._open:
            return
        elif tag == "caption":
            self._caption = []
        elif tag in ("thead", "tfoot"):
            self._in_body = False
        elif tag == "tbody":
            self._in_body = True
        elif tag == "tr" and self._in_body:
            self._open[-1][1].append([])
        elif tag == "td" and self._in_body and self._open[-1][1]:
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "table" and self._open:
            name, rows = self._open.pop()
            if name:
                self.tables[name] = rows
        elif tag == "caption" and self._caption is not None and self._open:
            caption = " ".join("".join(self._caption).split())
            name, rows = self._open[-1]
            self._open[-1] = (name or caption, rows)
            self._caption = None
        elif tag == "td" and self._cell is not None:
            self._open[-1][1][-1].append(" ".join("".join(self._cell).split()))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)
        elif self._caption is not None:
            self._caption.append(data)


def tables(html: str) -> dict[str, list[list[str]]]:
    """Every named table of ``html``: its name -> the rows of its body, each the texts of its cells."""
    parser = _Tables()
    parser.feed(html)
    parser.close()
    return parser.tables


def queue_depths(broker_page: str) -> dict[str, int]:
    """The Broker page's queues: name -> the messages waiting in it."""
    return {row[0]: int(row[1].replace(",", "")) for row in tables(broker_page).get("queue-table", [])
            if len(row) > 1 and row[1].replace(",", "").isdigit()}
