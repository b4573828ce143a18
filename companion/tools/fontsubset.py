"""Make ``companion/fonts/NotoSansCJK{sc,tc}-Regular-subset.otf``, the fonts the Chinese
editions' figures use (registered by :func:`companion.plotting.use_cjk_font`): SC for
zh-CN, TC for zh-TW, so Traditional text is drawn with Taiwan's glyph forms.

    apt-get install fonts-noto-cjk
    python -m companion.tools.fontsubset /usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc

The full Noto Sans CJK collection (SIL OFL 1.1, 19 MB: Debian's fonts-noto-cjk) holds
the SC and TC faces; each is cut to the characters a course figure can show: GB 2312's
level-1 hanzi (3,755, the common Simplified set), Big5's common hanzi (5,401) and the
Traditional forms OpenCC's s2twp gives for the first set, CJK punctuation, full-width
forms, every character of the package's message tables and of the translation files'
code fragments (what notebook code prints and draws). About 1.7 MB each; a glyph
outside the set falls back to DejaVu Sans and matplotlib warns, which
tests/test_translations.py would catch for the package's own strings.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

FONTS = Path(__file__).resolve().parent.parent / "fonts"
FACES = {"Noto Sans CJK SC": FONTS / "NotoSansCJKsc-Regular-subset.otf",
         "Noto Sans CJK TC": FONTS / "NotoSansCJKtc-Regular-subset.otf"}


def _decode_range(codec: str, rows, cols) -> set[str]:
    found = set()
    for hi in rows:
        for lo in cols:
            try:
                found.add(bytes([hi, lo]).decode(codec))
            except UnicodeDecodeError:
                pass
    return found


def characters() -> str:
    gb_level1 = _decode_range("gb2312", range(0xB0, 0xD8), range(0xA1, 0xFF))
    big5_common = _decode_range("big5", range(0xA4, 0xC7),
                                list(range(0x40, 0x7F)) + list(range(0xA1, 0xFF)))
    import opencc   # pinned in requirements.txt (the build tool uses it too)
    traditional = set(opencc.OpenCC("s2twp").convert("".join(sorted(gb_level1))))
    from ..i18n import TRADITIONAL
    from ..i18n.checker_strings import CHECKER_ZH_CN
    from ..i18n.messages import ZH_CN
    from ..i18n.notebook_strings import NOTEBOOK_ZH_CN
    tw = json.loads(TRADITIONAL.read_text(encoding="utf-8"))
    ours = set("".join([*ZH_CN.values(), *NOTEBOOK_ZH_CN.values(), *CHECKER_ZH_CN.values(),
                        *(v for table in tw.values() if isinstance(table, dict)
                          for v in table.values())]))
    # what notebook code prints and draws in the Chinese editions (the translation files'
    # code fragments: figure titles and labels among them), in both scripts
    from . import zh_tw
    fragments = "".join(zh for path in sorted((FONTS.parents[1] / "translations" / "zh-CN").glob("*.json"))
                        for pairs in (json.loads(path.read_text(encoding="utf-8")).get("code") or {}).values()
                        for _, zh in pairs)
    ours |= set(fragments) | set(zh_tw.converter()(fragments))
    punctuation = {chr(c) for c in range(0x3000, 0x3040)} | \
        {chr(c) for c in range(0xFF00, 0xFFF0)} | set("“”‘’—…·")
    return "".join(sorted(gb_level1 | big5_common | traditional | ours | punctuation))


def _subset(font, out: Path, text: str) -> None:
    from fontTools import subset

    options = subset.Options()
    options.hinting = False          # figures are rasterised at 100 dpi and up
    options.layout_features = []     # no vertical forms or locl: horizontal labels only
    options.name_IDs = ["*"]         # keep the copyright and OFL notice (name IDs 0, 13, 14)
    options.notdef_outline = True
    subsetter = subset.Subsetter(options)
    subsetter.populate(text=text)
    subsetter.subset(font)
    font.save(out)
    print(f"wrote {out} ({out.stat().st_size / 1e6:.2f} MB)")


def main(source: str) -> None:
    from fontTools.ttLib import TTCollection

    faces = {f["name"].getDebugName(4): f for f in TTCollection(source).fonts}
    missing = sorted(set(FACES) - set(faces))
    if missing:
        raise ValueError(f"source={source!r} lacks the faces {missing}; pass Debian's "
                         "fonts-noto-cjk NotoSansCJK-Regular.ttc")
    text = characters()
    for face, out in FACES.items():
        _subset(faces[face], out, text)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m companion.tools.fontsubset NotoSansCJK-Regular.ttc")
    main(sys.argv[1])
