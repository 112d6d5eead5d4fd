import pytest

from adr_review.core.text import (
    contains_verbatim,
    is_japanese,
    normalize,
    normalize_for_match,
    search_tokens,
    token_form,
    tokenize,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Use Kafka for events", ["use", "kafka", "for", "events"]),
        ("snake_case and CamelCase", ["snake", "case", "and", "camelcase"]),
        ("ＡＢＣ　１２３", ["abc", "123"]),  # full-width folds to ASCII (NFKC)
        ("盲点検出", ["盲点", "点検", "検出"]),  # overlapping CJK bigrams
        ("決", ["決"]),  # a lone CJK character stays a unigram
        (
            "Redis をキャッシュに使う",
            ["redis", "をキ", "キャ", "ャッ", "ッシ", "シュ", "ュに", "に使", "使う"],
        ),
        ("ADR-0071: 再定義", ["adr", "0071", "再定", "定義"]),
        ("ﾊﾝｶｸ", ["ハン", "ンカ", "カク"]),  # half-width katakana -> full-width
        ("", []),
    ],
)
def test_tokenize(text: str, expected: list[str]) -> None:
    assert tokenize(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a CJK run is cut at its hiragana; the kanji / katakana pieces are bigrammed
        ("Redis をキャッシュに使う", ["redis", "キャ", "ャッ", "ッシ", "シュ", "使"]),
        ("設計を見直す", ["設計", "見直"]),
        ("盲点検出", ["盲点", "点検", "検出"]),  # no hiragana: as tokenize
        ("の", ["の"]),  # a run of nothing but hiragana keeps its bigrams (kana-only text stays searchable)
        ("これは ひらがな", ["これ", "れは", "ひら", "らが", "がな"]),
        ("ADR-0071: 再定義", ["adr", "0071", "再定", "定義"]),
        ("snake_case and CamelCase", ["snake", "case", "and", "camelcase"]),  # other scripts: as tokenize
        ("ﾊﾝｶｸ", ["ハン", "ンカ", "カク"]),
        ("", []),
    ],
)
def test_search_tokens(text: str, expected: list[str]) -> None:
    assert search_tokens(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Use Kafka for events",
        "snake_case, CamelCase and dotted.names: v1.2",
        "ＡＢＣ　１２３ ÉTÉ",
        "盲点検出 カタカナ",
    ],
)
def test_search_tokens_equal_tokenize_without_hiragana(text: str) -> None:
    assert search_tokens(text) == tokenize(text)


@pytest.mark.parametrize(
    "text",
    [
        "Tabs\tand\n\nnew lines,  double  spaces\u00a0and NBSP",
        "zero\u200bwidth join\u200dme \ufeffBOM and word\u2060joiner",  # invisible, in non-ASCII text
        "ＦＵＬＬＷＩＤＴＨ ｶﾀｶﾅ ① ﬁne Straße",
        "line\u2028separator\x1cfile separator\x85next line",
        "   leading and trailing   ",
        "日本語\u3000の 文章",
        "",
    ],
)
def test_token_form_is_normalize_but_for_whitespace(text: str) -> None:
    # what the token patterns read: no whitespace is ever part of a token, so the folding is skipped
    assert token_form(text).split() == normalize(text).split()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("zero\u200bwidth \ufeffBOM", "zerowidth bom"),  # invisible characters out
        ("ＡＢＣ\u2060ｶﾀｶﾅ  Tab\t", "abcカタカナ  tab\t"),  # NFKC, case folded, whitespace kept
        ("Straße", "strasse"),
        ("plain ASCII\n", "plain ascii\n"),
    ],
)
def test_token_form(text: str, expected: str) -> None:
    assert token_form(text) == expected


def test_no_search_token_mixes_hiragana_with_other_characters() -> None:
    text = "イベント駆動アーキテクチャを採用し、Kafka でドメインイベントを配信する。これはテストです"
    hiragana = {chr(c) for c in range(0x3040, 0x30A0)}
    for token in search_tokens(text):
        has = {ch in hiragana for ch in token}
        assert len(has) == 1, token


@pytest.mark.parametrize(
    ("haystack", "needle", "expected"),
    [
        ("We chose Kafka for order events.", "chose Kafka", True),
        ("We chose\n  Kafka   for order events.", "chose Kafka for", True),  # line break + run of spaces
        ("We chose Kafka.", "chose kafka", False),  # case is kept: a quote is a quote
        ("ＡＰＩ を使う", "API を使う", True),  # full-width vs half-width
        (
            "ガイドラインに従う",
            "\u30ab\u3099イドライン",
            True,
        ),  # decomposed kana (カ + combining dakuten) composes under NFKC
        ("盲点検出\nエンジン", "盲点検出エンジン", True),  # a Japanese line wrap
        ("text", "", False),
        ("zero\u200bwidth", "zerowidth", True),
    ],
)
def test_contains_verbatim(haystack: str, needle: str, expected: bool) -> None:
    assert contains_verbatim(haystack, needle) is expected


def test_normalize_folds_case_width_and_space() -> None:
    assert normalize("  Ｈｅｌｌｏ\t\nWORLD ") == "hello world"
    assert normalize_for_match("Ｈｅｌｌｏ  World") == "Hello World"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("認証方式を OAuth 2.0 に統一する", True),
        ("Use OAuth 2.0 everywhere", False),
        ("", False),
        ("123", False),
    ],
)
def test_is_japanese(text: str, expected: bool) -> None:
    assert is_japanese(text) is expected
