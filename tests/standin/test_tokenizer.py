"""The stand-in's word tokenizer and a request's growing output."""

from __future__ import annotations

from sglang_standin import tokenizer


def test_decode_gives_one_word_per_id_that_encode_reads_back():
    ids = tokenizer.output_ids(7, 300)
    text = tokenizer.decode(ids)
    assert len(text.split()) == 300
    assert tokenizer.encode(text) == ids


def test_output_grown_in_steps_equals_output_made_at_once():
    out = tokenizer.Output(seed=42)
    for count in (0, 1, 1, 5, 64, 128, 3):  # growing, repeated, and a shorter count again
        ids, text = out.upto(count)
        assert ids == tokenizer.output_ids(42, count)
        assert text == tokenizer.decode(tokenizer.output_ids(42, count))


def test_the_ids_returned_are_the_callers_own():
    out = tokenizer.Output(seed=1)
    ids, _ = out.upto(4)
    ids.append(99)
    assert out.upto(4)[0] == tokenizer.output_ids(1, 4)
