"""``text.short_text_cache``: short texts computed once, long ones every time and never kept."""

from __future__ import annotations

from retrieval.text import short_text_cache


def test_short_texts_are_cached_and_long_ones_are_not():
    calls: list[tuple[str, bool]] = []

    @short_text_cache(max_length=5, maxsize=8)
    def shout(text: str, loud: bool = True) -> str:
        calls.append((text, loud))
        return text.upper() if loud else text

    assert [shout("abc"), shout("abc"), shout("abc", False)] == ["ABC", "ABC", "abc"]
    assert calls == [("abc", True), ("abc", False)]  # one computation per distinct arguments
    assert shout("abcdef") == shout("abcdef") == "ABCDEF"
    assert calls[2:] == [("abcdef", True)] * 2  # longer than max_length: computed each time
    shout.cache_clear()
    shout("abc")
    assert calls[-1] == ("abc", True)
    assert getattr(shout, "__name__", None) == "shout" and shout.__module__ == __name__  # found by cache-clearing helpers


def test_the_cache_is_bounded():
    calls: list[str] = []

    @short_text_cache(max_length=10, maxsize=2)
    def same(text: str) -> str:
        calls.append(text)
        return text

    for text in ("a", "b", "c", "a"):
        same(text)
    assert calls == ["a", "b", "c", "a"]  # "a" was evicted by the third distinct text
