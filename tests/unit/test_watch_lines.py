"""poolboy.kube.watch.lines: newline-delimited JSON from a chunked watch stream, however the chunks fall."""

from __future__ import annotations

from collections.abc import Iterator

from hypothesis import given
from hypothesis import strategies as st

from poolboy.kube.watch import lines


class Chunks:
    """A response whose stream yields these chunks (the part of urllib3's response that ``lines`` reads)."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    def stream(self, amt: int | None, decode_content: bool) -> Iterator[bytes]:
        yield from self.chunks


def test_a_line_split_across_chunks_is_reassembled() -> None:
    assert list(lines(Chunks([b'{"type":"ADD', b'ED"}\n{"ty', b'pe":"MODIFIED"}\n']))) == \
        [b'{"type":"ADDED"}', b'{"type":"MODIFIED"}']


def test_many_lines_in_one_chunk_and_a_last_line_without_newline() -> None:
    assert list(lines(Chunks([b"a\nb\n\n c \n", b"d"]))) == [b"a", b"b", b"c", b"d"]


@given(st.lists(st.binary(min_size=1).filter(lambda b: b"\n" not in b and b.strip() == b), max_size=20),
       st.lists(st.integers(min_value=1, max_value=7), min_size=1, max_size=10))
def test_any_cut_of_the_stream_gives_the_same_lines(items: list[bytes], cuts: list[int]) -> None:
    stream = b"".join(item + b"\n" for item in items)
    chunks, at, i = [], 0, 0
    while at < len(stream):
        size = cuts[i % len(cuts)]
        chunks.append(stream[at:at + size])
        at, i = at + size, i + 1
    assert list(lines(Chunks(chunks))) == items
