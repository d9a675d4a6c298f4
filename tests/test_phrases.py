"""Every framework text exists in both languages, and the English one is English.

Finds each :class:`framework.phrases.Phrase` at the top of every framework module, so a
notice added in one language only fails here, whoever adds it.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import string

import pytest

import framework
from framework.phrases import Phrase, language_or_default
from framework.prompts.environment import PACKAGED

HAN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff\u3000-\u303f\uff00-\uffef]")


def all_phrases() -> list[tuple[str, Phrase]]:
    found: list[tuple[str, Phrase]] = []
    for info in pkgutil.walk_packages(framework.__path__, "framework."):
        if info.name.endswith("__main__"):
            continue  # importing it runs the CLI
        try:
            module = importlib.import_module(info.name)
        except ImportError:  # an optional extra (server, adapters) not installed
            continue
        for name, value in vars(module).items():
            if isinstance(value, Phrase) and getattr(module, "__name__", "") == info.name:
                found.append((f"{info.name}.{name}", value))
    return found


def fields(text: str) -> set[str]:
    return {f for _, f, _, _ in string.Formatter().parse(text) if f}


@pytest.mark.parametrize(("name", "phrase"), all_phrases())
def test_a_phrase_says_the_same_in_both_languages(name: str, phrase: Phrase) -> None:
    assert phrase.en.strip() and phrase.zh.strip(), f"{name}: a side is empty"
    assert not HAN.search(phrase.en), f"{name}: Chinese in the English text: {phrase.en!r}"
    assert fields(phrase.en) == fields(phrase.zh), f"{name}: placeholders differ"


def test_every_packaged_template_exists_in_both_languages() -> None:
    en = {p.name for p in (PACKAGED / "en").glob("*.j2")}
    zh = {p.name for p in (PACKAGED / "zh").glob("*.j2")}
    assert en == zh and en


def test_language_tags_fall_back_to_a_known_one() -> None:
    assert [language_or_default(t) for t in ("zh-CN", "EN_us", "fr", None)] == [
        "zh",
        "en",
        "en",
        "en",
    ]
    assert Phrase(en="{n} runs", zh="{n} 次")("zh-Hans", n=2) == "2 次"
