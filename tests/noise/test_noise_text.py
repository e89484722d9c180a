from __future__ import annotations

import pytest

from elitr_bench.noise.text import (
    is_protected,
    match_case,
    measure_wer,
    normalise_words,
    split_affixes,
    tokenize,
    word_keys,
)


@pytest.mark.parametrize(
    "token",
    [
        "(PERSON4)",
        "[ORGANIZATION2]",
        "[PERSON3]'s",
        "[PERSON12],",
        "<laugh/>",
        "<unintelligible/>",
        "<parallel_talk>Bye",
        "</another_language>",
        "[OTHER]",
    ],
)
def test_protected_tokens(token: str) -> None:
    assert is_protected(token, "default")
    assert not is_protected(token, "none")


@pytest.mark.parametrize("token", ["Hello", "(hello)", "[sic]", "a<b", "PERSON4", "e-mail"])
def test_ordinary_tokens_are_not_protected(token: str) -> None:
    assert not is_protected(token, "default")


def test_tokenize_keeps_exact_whitespace() -> None:
    text = " (PERSON1) Hi  there,\n\nyes.\t "
    toks = tokenize(text)
    rebuilt = "".join(s + t for s, t in zip(toks.separators, toks.tokens, strict=False))
    assert rebuilt + toks.separators[-1] == text
    assert toks.tokens == ("(PERSON1)", "Hi", "there,", "yes.")


def test_measurement_splits_lines_and_ignores_case_and_punctuation() -> None:
    # A bare newline must separate words (jiwer alone splits on spaces only).
    assert normalise_words("(PERSON1) Hello,\nWorld! <laugh/> -") == [
        "person1",
        "hello",
        "world",
        "<laugh>",
    ]
    m = measure_wer("Hello,\nworld today", "hello world")
    assert (m.wer, m.deletions, m.reference_words) == (pytest.approx(1 / 3), 1, 3)


def test_word_keys_match_measured_words() -> None:
    tokens = ["(PERSON1)", "Don't", "--", "e-mail", "Hi!"]
    assert word_keys(tokens) == ["person1", "dont", "", "email", "hi"]
    assert " ".join(k for k in word_keys(tokens) if k).split() == normalise_words(" ".join(tokens))


def test_affixes_and_casing() -> None:
    assert split_affixes('"Hello,"') == ('"', "Hello", ',"')
    assert split_affixes("don't.") == ("", "don't", ".")
    assert match_case("early", "Earlier") == "Early"
    assert match_case("a cross", "ACROSS") == "A CROSS"
    assert match_case("early", "earlier") == "early"
