"""What a user may call a run and tag it with: UTF-8 text the history can keep, and tags that a list, a query
(`tag:baseline`) and the command line can all hold."""

from __future__ import annotations

from typing import Sequence

from ..ground.errors import WorkbenchError

MAX_TAG_CHARS = 40


def unicode_text(text: str, what: str) -> str:
    """`text` when it is text the history can keep; a WorkbenchError naming the first byte that is not, when it came
    from bytes that were not UTF-8 (a command line in another encoding, a Latin-1 file: Python keeps each such byte
    as a lone surrogate, which no UTF-8 database can store)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        byte = ord(text[exc.start]) - 0xDC00 if 0xDC80 <= ord(text[exc.start]) <= 0xDCFF else None
        where = f"byte 0x{byte:02x}" if byte is not None else f"character U+{ord(text[exc.start]):04X}"
        raise WorkbenchError(f"{what} is not UTF-8 text ({where} at character {exc.start + 1})",
                             "write it in UTF-8: set the terminal to UTF-8, or convert a file with "
                             "`iconv -f latin1 -t utf-8`") from None
    return text


def clean_tags(tags: Sequence[str]) -> tuple[str, ...]:
    """Tags as the history keeps them: trimmed, each once, in the order given. A tag is one word (no spaces) of
    at most MAX_TAG_CHARS characters, so that a list, a query (`tag:baseline`) and the command line can hold it."""
    if isinstance(tags, str):  # one tag, not its letters
        tags = [tags]
    cleaned = []
    for tag in tags:
        tag = unicode_text(tag.strip(), "a tag")
        if not tag:
            raise WorkbenchError("a tag cannot be empty")
        if any(c.isspace() for c in tag):
            raise WorkbenchError(f"the tag {tag!r} has a space in it: a tag is one word",
                                 "join its words with - or _, or make them separate tags: separated by "
                                 "commas in the window (baseline, amp), separate arguments on the command line")
        if len(tag) > MAX_TAG_CHARS:
            raise WorkbenchError(f"the tag {tag[:MAX_TAG_CHARS]}… is {len(tag)} characters long",
                                 f"a tag has at most {MAX_TAG_CHARS}: put longer words in the run's notes")
        cleaned.append(tag)
    return tuple(dict.fromkeys(cleaned))
