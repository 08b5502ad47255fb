"""Token labels name one tuple each: different tuples of a relation never share a label, and
ordinary values keep their plain labels (hypothesis)."""
from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from lipspark.vocabulary.tokens import NULL, render_value, token_labels

#: Values that are hard to tell apart when written: null and its look-alikes, separators,
#: quotes, the duplicate mark, spaces at the ends, control characters.
TRICKY = st.sampled_from([None, "", "null", "None", "nan", "NULL", ",", "a,b", "a", "b", "b,c", "#", "#2", "C#2", "C",
                          '"', '"a"', "\\", " a", "a ", "\n", "\x00", "\x85", "a\tb", "Audi A4", "12:30"])
VALUES = st.one_of(TRICKY, st.text(max_size=6), st.none())


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(VALUES, VALUES), max_size=8))
def test_different_tuples_have_different_labels(rows):
    labels = token_labels("R", rows)
    assert len(set(labels)) == len(labels)
    # without their duplicate marks, labels are equal exactly when the tuples are
    plain = {r: token_labels("R", [r])[0] for r in rows}
    assert len(set(plain.values())) == len(plain)
    assert all("\n" not in lab and "\x00" not in lab for lab in labels)  # one line, printable controls escaped


@settings(max_examples=200, deadline=None)
@given(st.lists(VALUES, min_size=1, max_size=4))
def test_a_label_reads_back_as_its_values(values):
    """Bare values contain no separator and quoted ones are JSON strings: the label splits back."""
    text = token_labels("R", [tuple(values)])[0][len("R:"):]
    decoder, out, i = json.JSONDecoder(), [], 0
    while True:
        if text.startswith('"', i):
            v, i = decoder.raw_decode(text, i)
        else:
            j = text.find(",", i)
            j = len(text) if j < 0 else j
            v, i = text[i:j], j
            v = None if v == NULL else v
        out.append(v)
        if i == len(text):
            break
        assert text[i] == ","
        i += 1
    assert out == [None if v is None else (v if isinstance(v, str) else render_value(v)) for v in values]


def test_ordinary_values_keep_their_plain_labels():
    assert token_labels("Cars", [("C1",), ("D1C000004",)]) == ["Cars:C1", "Cars:D1C000004"]
    assert token_labels("Requests", [("B1",)]) == ["Requests:B1"]
    assert token_labels("Obs", [(3, 1961, 12.0), ("Audi A4", 2.5, -1)]) == ["Obs:3,1961,12", "Obs:Audi A4,2.5,-1"]
    assert token_labels("A", [("x", 1), ("x", 1), ("y", 2)]) == ["A:x,1", "A:x,1#2", "A:y,2"]
