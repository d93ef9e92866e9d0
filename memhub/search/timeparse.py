"""Time expressions in a query, English and Chinese, turned into an occurred_at window by rules.

``window("what did we decide last week?", now)`` -> the Monday-to-Monday week
before ``now``'s. The reference time is the request's ``as_of`` (to replay
history) or the time of the search. The first expression that parses wins;
a query without one gets None and is ranked without a time boost.

Windows are half-open [start, end) in the reference time's timezone (UTC on
the hub). Coverage: today / yesterday / the day before yesterday; N days,
weeks, months or years ago (digits, English or Chinese numerals); last /
this / past week, weekend, month or year; last <weekday>; <month> [<day>]
[<year>] and <day> <month> [<year>]; a bare year; ISO dates; 今天 昨天 前天,
上周 本周 上个月 本月 去年 今年 前年, N天前 N周前 N个月前 N年前, 去年十月,
2023年5月(8日), 5月8日, 上周三.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, tzinfo

from memhub.core.model import TimeWindow

_MONTHS = {
    m: i + 1
    for i, names in enumerate(
        [
            ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",), ("june", "jun"),
            ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"), ("october", "oct"),
            ("november", "nov"), ("december", "dec"),
        ]
    )
    for m in names
}  # fmt: skip
_WEEKDAYS = {d: i for i, d in enumerate(("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"))}
_EN_NUM = {w: i for i, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve".split())}
_EN_NUM |= {"a": 1, "an": 1, "a couple of": 2, "couple of": 2, "a few": 3, "few": 3}
_ZH_DIGIT = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_ZH_WEEKDAY = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}

_MONTH_RE = "|".join(sorted(_MONTHS, key=len, reverse=True))
_NUM_RE = r"\d+|" + "|".join(sorted((re.escape(w) for w in _EN_NUM), key=len, reverse=True))
_ZH_NUM_RE = r"\d+|[零〇一二两三四五六七八九十]+"


def _start_of(window: TimeWindow) -> datetime:
    assert window.start is not None  # the windows built here always have both ends
    return window.start


def _day(dt: datetime) -> datetime:
    return dt.replace(hour=0, minute=0, second=0, microsecond=0)


def _month_start(year: int, month: int, tz: tzinfo | None) -> datetime:
    return datetime(year, month, 1, tzinfo=tz)


def _month(year: int, month: int, tz: tzinfo | None) -> TimeWindow:
    end = _month_start(year + (month == 12), month % 12 + 1, tz)
    return TimeWindow(_month_start(year, month, tz), end)


def _year(year: int, tz: tzinfo | None) -> TimeWindow:
    return TimeWindow(datetime(year, 1, 1, tzinfo=tz), datetime(year + 1, 1, 1, tzinfo=tz))


def _days(start: datetime, n: int = 1) -> TimeWindow:
    return TimeWindow(_day(start), _day(start) + timedelta(days=n))


def _week_of(dt: datetime) -> TimeWindow:
    monday = _day(dt) - timedelta(days=dt.weekday())
    return TimeWindow(monday, monday + timedelta(days=7))


def _months_back(ref: datetime, n: int) -> TimeWindow:
    index = ref.year * 12 + ref.month - 1 - n
    return _month(index // 12, index % 12 + 1, ref.tzinfo)


def _zh_number(text: str) -> int | None:
    if text.isdigit():
        return int(text)
    if text == "十":
        return 10
    if "十" in text:
        tens, _, ones = text.partition("十")
        return (_ZH_DIGIT.get(tens, 1) if tens else 1) * 10 + (_ZH_DIGIT.get(ones, 0) if ones else 0)
    value = 0
    for ch in text:
        if ch not in _ZH_DIGIT:
            return None
        value = value * 10 + _ZH_DIGIT[ch]
    return value


def _en_number(text: str) -> int:
    return int(text) if text.isdigit() else _EN_NUM[text]


def _ago(unit: str, n: int, ref: datetime) -> TimeWindow | None:
    if n < 0 or n > 100:
        return None
    if unit.startswith(("day", "天")):
        return _days(ref - timedelta(days=n))
    if unit.startswith(("week", "周", "星期", "礼拜")):
        return _week_of(ref - timedelta(weeks=n))
    if unit.startswith(("month", "月")):
        return _months_back(ref, n)
    if unit.startswith(("year", "年")):
        return _year(ref.year - n, ref.tzinfo)
    return None


def _last_month_named(month: int, ref: datetime, year: int | None) -> TimeWindow:
    """<month> alone means its most recent occurrence (this year's if it has begun, else last year's)."""
    if year is None:
        year = ref.year if month <= ref.month else ref.year - 1
    return _month(year, month, ref.tzinfo)


def _date(year: int, month: int, day: int, ref: datetime) -> TimeWindow | None:
    try:
        return _days(datetime(year, month, day, tzinfo=ref.tzinfo))
    except ValueError:
        return None


def _english(q: str, ref: datetime) -> TimeWindow | None:  # noqa: C901, PLR0911 - one rule per branch, in priority order
    tz = ref.tzinfo
    if m := re.search(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b", q):
        return _date(int(m[1]), int(m[2]), int(m[3]), ref)
    if re.search(r"\bthe day before yesterday\b", q):
        return _days(ref - timedelta(days=2))
    if re.search(r"\byesterday\b|\blast night\b", q):
        return _days(ref - timedelta(days=1))
    if re.search(r"\btoday\b|\bthis (?:morning|afternoon|evening)\b|\btonight\b", q):
        return _days(ref)
    if m := re.search(rf"\b({_NUM_RE})\s+(days?|weeks?|months?|years?)\s+ago\b", q):
        return _ago(m[2], _en_number(m[1]), ref)
    if m := re.search(r"\b(last|this|past|previous)\s+(week|weekend|month|year)\b", q):
        which, unit = m[1], m[2]
        back = 0 if which == "this" else 1
        if unit == "week":
            return _week_of(ref - timedelta(weeks=back))
        if unit == "weekend":
            saturday = _start_of(_week_of(ref - timedelta(weeks=back))) + timedelta(days=5)
            return TimeWindow(saturday, saturday + timedelta(days=2))
        if unit == "month":
            return _months_back(ref, back)
        return _year(ref.year - back, tz)
    if m := re.search(r"\b(last|on|this past)\s+(" + "|".join(_WEEKDAYS) + r")\b", q):
        back = (ref.weekday() - _WEEKDAYS[m[2]]) % 7 or 7
        return _days(ref - timedelta(days=back))
    if m := re.search(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTH_RE})\b,?\s*(\d{{4}})?", q):
        month = _MONTHS[m[2]]
        year = int(m[3]) if m[3] else (ref.year if month <= ref.month else ref.year - 1)
        return _date(year, month, int(m[1]), ref)
    if m := re.search(rf"\b({_MONTH_RE})\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?!\d)(?:,?\s*(\d{{4}}))?", q):
        if not (m[1] == "may" and not m[3] and int(m[2]) > 31):
            month = _MONTHS[m[1]]
            year = int(m[3]) if m[3] else (ref.year if month <= ref.month else ref.year - 1)
            return _date(year, month, int(m[2]), ref)
    if m := re.search(rf"\b(?:in|during|since|of|by)?\s*({_MONTH_RE})\b,?\s*(\d{{4}})?", q):
        # "may" is usually the verb: only as a month with a year or after "in".
        if m[1] != "may" or m[2] or re.search(r"\b(?:in|during)\s+may\b", q):
            return _last_month_named(_MONTHS[m[1]], ref, int(m[2]) if m[2] else None)
    if m := re.search(r"\b(?:in|during|since|of)\s+((?:19|20)\d{2})\b", q):
        return _year(int(m[1]), tz)
    return None


def _chinese(q: str, ref: datetime) -> TimeWindow | None:  # noqa: C901, PLR0911 - one rule per branch, in priority order
    tz = ref.tzinfo
    if m := re.search(r"(\d{4})年(\d{1,2})月(?:(\d{1,2})[日号])?", q):
        return _date(int(m[1]), int(m[2]), int(m[3]), ref) if m[3] else _month(int(m[1]), int(m[2]), tz)
    if m := re.search(rf"(去年|今年|前年)({_ZH_NUM_RE})月", q):
        year = ref.year - {"今年": 0, "去年": 1, "前年": 2}[m[1]]
        month = _zh_number(m[2])
        return _month(year, month, tz) if month and 1 <= month <= 12 else None
    if m := re.search(rf"(?<![年\d])({_ZH_NUM_RE})月({_ZH_NUM_RE})[日号]", q):
        month, day = _zh_number(m[1]), _zh_number(m[2])
        if month and day and 1 <= month <= 12:
            year = ref.year if month <= ref.month else ref.year - 1
            return _date(year, month, day, ref)
    if "前天" in q:
        return _days(ref - timedelta(days=2))
    if "昨天" in q or "昨晚" in q:
        return _days(ref - timedelta(days=1))
    if "今天" in q or "今晚" in q:
        return _days(ref)
    if m := re.search(rf"({_ZH_NUM_RE})\s*(?:个)?(天|周|星期|礼拜|月|年)(?:以)?前", q):
        n = _zh_number(m[1])
        return _ago(m[2], n, ref) if n is not None else None
    if m := re.search(r"(上|这|本)(?:个)?(?:周|星期|礼拜)([一二三四五六日天])", q):
        monday = _start_of(_week_of(ref - timedelta(weeks=1 if m[1] == "上" else 0)))
        return _days(monday + timedelta(days=_ZH_WEEKDAY[m[2]]))
    if re.search(r"上(?:个)?(?:周|星期|礼拜)", q):
        return _week_of(ref - timedelta(weeks=1))
    if re.search(r"(?:这|本)(?:个)?(?:周|星期|礼拜)", q):
        return _week_of(ref)
    if re.search(r"上(?:个)?月", q):
        return _months_back(ref, 1)
    if re.search(r"(?:这|本)(?:个)?月", q):
        return _months_back(ref, 0)
    for word, back in (("前年", 2), ("去年", 1), ("今年", 0)):
        if word in q:
            return _year(ref.year - back, tz)
    return None


def window(query: str, ref: datetime) -> TimeWindow | None:
    """The occurred_at window the query's first time expression names, or None."""
    return _chinese(query, ref) or _english(query.lower(), ref)
