"""A word-level tokenizer: every token id is one lower-case word.

Text is the concatenation of " " + word for each token, so splitting the text on
whitespace gives back exactly the tokens that were generated: the streamed text
always decodes to the number of tokens the server reports.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

VOCAB_SIZE = 32000
_LETTERS = "abcdefghijklmnopqrstuvwxyz"
_WORD = re.compile(r"[a-z]+")


def word(token_id: int) -> str:
    """The word for a token id: its base-26 digits as letters, prefixed so no word repeats."""
    token_id %= VOCAB_SIZE
    digits = []
    n = token_id
    while True:
        n, rem = divmod(n, 26)
        digits.append(_LETTERS[rem])
        if n == 0:
            break
    # The leading letter encodes the length, so 'ab' and 'aab' never collide.
    return _LETTERS[len(digits)] + "".join(reversed(digits))


def token_id(piece: str) -> int:
    """Inverse of word(); words not made by word() hash into the vocabulary."""
    body = piece[1:]
    if _WORD.fullmatch(piece) and _LETTERS.index(piece[0]) == len(body):
        value = 0
        for ch in body:
            value = value * 26 + _LETTERS.index(ch)
        if value < VOCAB_SIZE:
            return value
    return sum(ord(c) * 31**i for i, c in enumerate(piece)) % VOCAB_SIZE


def encode(text: str) -> list[int]:
    return [token_id(piece) for piece in text.split()]


_SPACED_WORDS: list[str] = []  # " " + word(i) for every id, built on first use


def _spaced_words() -> list[str]:
    if not _SPACED_WORDS:
        _SPACED_WORDS.extend(" " + word(i) for i in range(VOCAB_SIZE))
    return _SPACED_WORDS


def decode(ids: Iterable[int]) -> str:
    words = _spaced_words()
    return "".join(words[i % VOCAB_SIZE] for i in ids)


def vocabulary() -> dict:
    """word -> id for every id, e.g. to build an offline HF WordLevel tokenizer."""
    return {word(i): i for i in range(VOCAB_SIZE)}


def output_ids(seed: int, count: int, start: int = 0) -> list[int]:
    """Deterministic 'generated' token ids for a request."""
    return [(seed * 7919 + (start + i) * 104729) % VOCAB_SIZE for i in range(count)]


class Output:
    """A request's output so far, grown as tokens come: output_ids(seed, count) and its text,
    without redoing the tokens already made on every streamed chunk (SGLang's /generate streams
    the whole text and ids so far each time: redone from the start, that costs the stand-in's
    CPU the square of the output length per request)."""

    def __init__(self, seed: int):
        self.seed = seed
        self.ids: list[int] = []
        self._text = ""

    def upto(self, count: int) -> tuple[list[int], str]:
        """(ids, text) of the first count tokens; the ids are a fresh list."""
        if count > len(self.ids):
            new = output_ids(self.seed, count - len(self.ids), start=len(self.ids))
            self.ids.extend(new)
            self._text += decode(new)
        if count < len(self.ids):
            return self.ids[:count], decode(self.ids[:count])
        return list(self.ids), self._text
