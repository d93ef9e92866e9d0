"""Obvious secrets in stored text: found before anything is stored, then refused or redacted, never kept silently.

A memory is read back by every agent that may read its namespace, for as
long as it lives, and copied into prompts: a password or API key written
into it leaks to all of them. These patterns catch the unmistakable forms
(a private-key block or a bare key body, the prefixes providers put on their
keys, a JWT, a bearer token, credentials in a URL, a `password=...`
assignment or "password is X" in a dozen languages, a card number that
passes the Luhn check); they are not a data-loss-prevention system, and a
secret in free prose ("the code is swordfish") passes.

Obfuscation: the patterns run on a *view* of the text in which invisible
characters are gone (Unicode format characters such as U+200B ZERO WIDTH
SPACE, the soft hyphen, bidi controls, tag characters, variation selectors,
the Hangul fillers), each character is NFKC-folded (full-width `ＡＫＩＡ`,
`：`, `．`, mathematical digits) and every decimal digit of any script is
its ASCII digit. The patterns themselves tolerate what keeps a secret
usable: spaces around a JWT's dots or inside a key's armor lines, card
groups joined by spaces, dashes, dots, slashes or underscores, a provider
prefix or an AWS key id in the wrong case. A hit found in the view is
mapped back to the span of the original text it came from, so redaction
replaces exactly that span (with the invisible characters inside it) and
leaves the text around it as it was.

What does not count (false flags are corruption: a redactor that rewrites
ids destroys content): a digit run that is part of a longer token (a UUID,
a hex id, a hash, a version, a phone number after `+`), a card-length run
not starting with 2-6 (no card network issues those) or not grouped like a
card, a placeholder value (`***`, `<token>`, `$VAR`, `{{x}}`), a "password
is ..." followed by an ordinary word (only a value shaped like a password
- a digit, a symbol or mixed case - or a quoted one counts in prose).

What happens to a hit is configuration (MEMHUB_SECRETS = redact | refuse,
memhub/curation/write_gate.py and memhub/curation/secret_fields.py).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

from memhub.core.regex_needs import contains_any

# ruff: noqa: E501 - one pattern per line reads better than regexes cut mid-alternation

_INVISIBLE_CLASS = (
    # Every Unicode format character (category Cf; tests/security/test_secret_obfuscation.py checks the list against
    # unicodedata), the combining grapheme joiner, variation selectors, the Hangul fillers and the Khmer inherent
    # vowels, which all render as nothing.
    "\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f"
    "\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0001\U000e0020-\U000e007f"
    "\u034f\u115f\u1160\u17b4\u17b5\u3164\uffa0\ufe00-\ufe0f\U000e0100-\U000e01ef"
)
INVISIBLE = re.compile(f"[{_INVISIBLE_CLASS}]")
_FOLD_CACHE_MAX = 20_000
"""Distinct characters whose folding is remembered: bounded, so a text of every code point grows nothing."""


class _Fold(dict[int, str]):
    """str.translate table: each character to what it is in the view ('' for an invisible one)."""

    def __missing__(self, code: int) -> str:
        ch = chr(code)
        if INVISIBLE.match(ch):
            out = ""
        elif unicodedata.category(ch) == "Nd":
            out = str(unicodedata.decimal(ch))
        else:
            out = unicodedata.normalize("NFKC", ch)
        if len(self) < _FOLD_CACHE_MAX:
            self[code] = out
        return out


_FOLD = _Fold()


@dataclass(frozen=True)
class View:
    """The text the patterns see, and for each of its characters the index of the original it came from."""

    text: str
    origin: list[int] | None
    """None: the view is the original character for character (the common case, ASCII or not)."""

    def span(self, start: int, end: int) -> tuple[int, int]:
        if self.origin is None:
            return start, end
        return self.origin[start], self.origin[end - 1] + 1


def view(text: str) -> View:
    """The normalised text secrets are looked for in (see the module docstring)."""
    if text.isascii():
        return View(text, None)  # ASCII has no format characters and is its own NFKC form
    folded = text.translate(_FOLD)
    if len(folded) == len(text) and INVISIBLE.search(text) is None:
        return View(folded, None)  # every character folded to exactly one: positions are unchanged
    parts: list[str] = []
    origin: list[int] = []
    for i, ch in enumerate(text):
        out = _FOLD[ord(ch)]
        parts.append(out)
        origin.extend([i] * len(out))
    return View("".join(parts), origin)


# -- the detectors -------------------------------------------------------------------------------------------------

_PLACEHOLDER = re.compile(
    r"\*+|<[^>]*>|\$\{?\w+\}?|%\w+%|\{\{.*\}\}|\{\w*\}|x+|X+|\.{3,}|…|none|null|nil|changeme|redacted|secret|password|\[REDACTED:\w+\]?",
    re.IGNORECASE,
)
_PASSWORDISH_SYMBOLS = set("!#$%&*+=?@^_~|\\/:;.,-")


def _not_placeholder(value: str) -> bool:
    return _PLACEHOLDER.fullmatch(value) is None and not value.startswith("[REDACTED")


def _passwordish(value: str) -> bool:
    """A prose value shaped like a password: a digit, a symbol, or an upper-case letter after a lower-case one."""
    if not _not_placeholder(value):
        return False
    if any(c.isdigit() for c in value) or any(c in _PASSWORDISH_SYMBOLS for c in value):
        return True
    return any(c.islower() for c in value) and any(c.isupper() for c in value[1:])


_CARD_NETWORKS = re.compile(
    # Issuer prefixes and lengths of the networks (Visa, Mastercard, Amex, Discover, JCB, Diners, UnionPay, Maestro):
    # a Luhn-valid number outside them is no card anyone can charge, and 9 in 10 random digit runs are outside.
    r"4(?:[0-9]{12}|[0-9]{15}|[0-9]{18})|5[1-5][0-9]{14}|2(?:2[2-9][1-9]|2[3-9][0-9]|[3-6][0-9]{2}|7[01][0-9]|720)[0-9]{12}"
    r"|3[47][0-9]{13}|6(?:011|4[4-9][0-9]|5[0-9]{2})[0-9]{12,15}|35(?:2[89]|[3-8][0-9])[0-9]{12,15}"
    r"|3(?:0[0-5]|[689][0-9])[0-9]{11,13}|62[0-9]{14,17}|(?:50|5[6-9]|6[0-9])[0-9]{10,17}"
)


def _luhn_card(digits: str) -> bool:
    return 13 <= len(digits) <= 19 and _CARD_NETWORKS.fullmatch(digits) is not None and luhn_valid(digits)


def _aws_key_id(match: re.Match[str]) -> bool:
    """AKIA/ASIA ids are upper case; lower-cased (still usable: upper-case it back) they need a digit, so that a
    20-letter word starting with "asia" is not one; grouped by fours they must be upper case and hold a digit."""
    whole = match.group(0)
    body = re.sub(r"[ _.\-]", "", whole[4:])
    digit = any(c.isdigit() for c in body)
    if len(body) != len(whole) - 4:
        return whole.isupper() and digit
    return whole.isupper() or (digit and any(c.isalpha() for c in body))


_PASSWORD_WORDS = (
    # English, German, French, Spanish, Portuguese, Italian (parola d'ordine), Dutch, Swedish, Norwegian, Danish,
    # Finnish, Polish, Czech and Slovak, Hungarian, Turkish, Romanian, Russian and Ukrainian, Greek, Hebrew, Arabic,
    # Persian, Hindi, Vietnamese, Indonesian and Malay, Thai.
    r"password|passwd|passwort|pwd|passphrase|passcode|kennwort|mot\s+de\s+passe|contrase[ñn]a|senha|"
    r"parola\s+d['’]ordine|wachtwoord|l[öo]senord|passord|adgangskode|salasana|has[łl]o|heslo|jelsz[óo]|[şs]ifre|"
    r"parol[aă]|пароль|κωδικός(?:\s+πρόσβασης)?|συνθηματικό|סיסמה|סיסמא|كلمة\s+(?:المرور|السر)|رمز\s+عبور|पासवर्ड|"
    r"m[ậa]t\s+kh[ẩa]u|kata\s+sandi"
)
_SECRET_WORDS = (
    r"secret|client[_-]?secret|secret[_-]?(?:access[_-]?)?key|api[_-]?key|access[_-]?key|private[_-]?key|"
    r"access[_-]?token|auth[_-]?token|refresh[_-]?token|session[_-]?token|bearer[_-]?token|token[_-]?secret"
)
_KEY_PREFIX = r"(?<![\w])(?:[A-Za-z0-9]{1,32}[_-]){0,4}"
"""An environment-style prefix: DB_PASSWORD, aws_secret_access_key, MYSQL_ROOT_PASSWORD."""
_VALUE = r"[\"'“‘«]?([^\s\"'“”‘’«»,;，。；]{4,})"
_PROSE_VERB = r"(?:is|was|ist|lautet|war|est|était|es|era|é|è|era|is\s+now|zijn|är|er|on|jest|je|je\s+to|olarak|это|είναι|הוא|هي|है|là|adalah)"
_PROSE_VALUE = r"[\"'“‘«]?([^\s\"'“”‘’«»,;，。；]*[^\s\"'“”‘’«»,;，。；.!?:)])"
_CJK_WORDS = r"密码|密碼|口令|密钥|密鑰|パスワード|暗証番号|비밀번호|암호"

Accept = Callable[[re.Match[str]], bool]


@dataclass(frozen=True)
class _Detector:
    kind: str
    pattern: re.Pattern[str]
    accept: Accept | None = None
    """Checked on each match; None: every match counts."""
    group: int = 0
    """The group that is secret: of `password=hunter2` only the value, so "password=" stays readable."""
    hints: tuple[str, ...] = ()
    """Lower-case strings one of which every match holds: the pattern runs only on a text that has one (a
    substring test costs a fraction of a regex scan, and most texts hold none). Empty: always run."""


def _value_ok(m: re.Match[str]) -> bool:
    return _not_placeholder(m.group(1))


def _prose_ok(m: re.Match[str]) -> bool:
    value = m.group(1)
    quoted = m.string[m.start(1) - 1] in "\"'“‘«"
    return len(value) >= 4 and (_passwordish(value) or (quoted and _not_placeholder(value)))


def _card_ok(m: re.Match[str]) -> bool:
    return _luhn_card(re.sub(r"[^0-9]", "", m.group(0)))


def _has_digit(m: re.Match[str]) -> bool:
    return any(c.isdigit() for c in m.group(1))


_ARMOR = r"(?:[A-Z0-9]+\s+){0,3}PRIVATE\s+KEY(?:\s+BLOCK)?"
_KEY_BODY = (
    # The first bytes of a DER private key in base64 (PKCS#1 RSA, PKCS#8 plain and encrypted, SEC1 EC, Ed25519)
    # and of an OpenSSH key: a key body is recognised without its armor lines, however those were mangled. Then
    # its full lines (64 or 70 characters) and one short last line: a line of prose after it is not eaten.
    r"(?:MII[A-Za-z0-9+/]{3}IBAAK|MII[A-Za-z0-9+/]{3}IBADAN|MI[A-Za-z0-9+/]{2,4}AgEAMB[AM]GByqGSM49|MHcCAQEE|MIGkAgEBBD|"
    r"MC4CAQAwBQYDK2Vw|b3BlbnNzaC1rZXktdjE|MI[A-Za-z0-9+/]{2,4}MF8GCSqGSIb3DQEFDTB|MI[A-Za-z0-9+/]{3,5}BfBgkqhkiG9w0BBQ0w)"
)
_CARD_SEP = r"(?:[ \t]*[-./_·•][ \t]*|[ \t]+)"
_CARD_START = r"(?<![0-9A-Za-z_+])(?<![0-9A-Za-z_][-.])"
_CARD_END = r"(?![0-9A-Za-z_])(?![-.][0-9A-Za-z])"

_CJK_HINTS = tuple(_CJK_WORDS.split("|"))
_PASSWORD_HINTS = (
    # Pieces of _PASSWORD_WORDS, lower case as str.lower() writes them, one of which each of those words holds.
    "pass", "pwd", "kennwort", "contrase", "senha", "parola", "wachtwoord", "senord", "adgangskode", "salasana",
    "has", "heslo", "jelsz", "ifre", "parol", "пароль", "κωδικός", "συνθηματικό", "סיסמ", "كلمة", "رمز", "पासवर्ड",
    "kh", "sandi",
)  # fmt: skip
_SECRET_HINTS = ("secret", "key", "token")

_DETECTORS: tuple[_Detector, ...] = (
    _Detector(
        "private_key",
        # The armor with dashes on at least one side, in any case, spaced or not, followed by what starts a key
        # (base64 or a PEM header; "-- begin private key rotation" is prose); then all up to the END line, or to
        # the end of the text when there is none (a truncated key is still a key).
        re.compile(
            rf"(?i)(?:-{{2,}}\s*BEGIN\s+{_ARMOR}\s*-*|-*\s*BEGIN\s+{_ARMOR}\s*-{{2,}})(?=\s*(?:[A-Za-z0-9+/=]{{20,}}|Proc-Type:|Comment:))[\s\S]*?(?:-*\s*END\s+{_ARMOR}\s*-{{2,}}|-{{2,}}\s*END\s+{_ARMOR}|$)"
        ),
        hints=("private",),
    ),
    _Detector(
        "private_key",
        re.compile(rf"\b{_KEY_BODY}[A-Za-z0-9+/=]*(?:\r?\n[A-Za-z0-9+/=]{{60,}})*(?:\r?\n[A-Za-z0-9+/=]{{1,59}}(?![\w+/=]))?"),
        hints=("mi", "mc4caqaw", "b3blbnnzac1"),
    ),
    _Detector("jwt", re.compile(r"\beyJ[\w-]{8,}\s*[.。]\s*eyJ[\w-]{8,}\s*[.。]\s*[\w-]{8,}"), hints=("eyj",)),
    _Detector(
        "aws_access_key",
        re.compile(r"(?i)\b(?:AKIA|ASIA)(?:[0-9A-Z]{16}|(?P<s>[ _.\-])[0-9A-Z]{4}(?:(?P=s)[0-9A-Z]{4}){3})\b"),
        _aws_key_id,
        hints=("akia", "asia"),
    ),
    _Detector(
        "github_token",
        re.compile(r"\b(?:(?i:gh[pousr]_)[A-Za-z0-9]{36,}|(?i:github_pat_)[A-Za-z0-9_]{40,})\b"),
        hints=("gh",),
    ),
    _Detector("slack_token", re.compile(r"\b(?i:xox[abposr]-)[A-Za-z0-9-]{10,}"), hints=("xox",)),
    _Detector("openai_key", re.compile(r"\b(?i:sk-)(?:(?i:proj|svcacct|admin)-)?[A-Za-z0-9_-]{20,}"), hints=("sk-",)),
    _Detector("stripe_key", re.compile(r"\b(?i:[sr]k_(?:live|test)_)[A-Za-z0-9]{16,}"), hints=("k_live_", "k_test_")),
    _Detector("google_api_key", re.compile(r"\b(?i:aiza)[0-9A-Za-z_-]{35}(?![\w-])"), hints=("aiza",)),
    _Detector("bearer_token", re.compile(r"(?i)\bbearer\s+([A-Za-z0-9._~+/-]{20,}=*)"), _has_digit, 1, ("bearer",)),
    _Detector(
        "url_credentials",
        re.compile(r"(?i)\b[a-z][a-z0-9+.-]{1,15}://[^\s:/@]{1,64}:([^\s@/]{3,})@"),
        _value_ok,
        1,
        ("://",),
    ),
    _Detector(
        "password",
        # key = value / key: value, the value a single token that is not a placeholder (***, <...>, $VAR, {{x}}).
        re.compile(rf"(?i){_KEY_PREFIX}(?:{_PASSWORD_WORDS}|{_SECRET_WORDS})\b[\"']?\s*[:=：]\s*{_VALUE}"),
        _value_ok,
        1,
        _PASSWORD_HINTS + _SECRET_HINTS,
    ),
    _Detector(
        "password",
        # "the password is X", "das Passwort lautet X", "the password for the vault is X": X shaped like a password.
        re.compile(
            rf"(?i)\b(?:{_PASSWORD_WORDS})(?:\s+(?:for|of|to|on|für|zum|pour|de|del|do|da|van|voor|för)(?:\s+[^\s:=]{{1,30}}){{1,3}}?)?"
            rf"\s+{_PROSE_VERB}:?\s+{_PROSE_VALUE}"
        ),
        _prose_ok,
        1,
        _PASSWORD_HINTS,
    ),
    _Detector("password", re.compile(rf"(?:{_CJK_WORDS})\s*[:：=]\s*([^\s，。,;；、]{{4,}})"), _value_ok, 1, _CJK_HINTS),
    # After 是/为/は/는 only what is shaped like a password (ASCII): "密码是我们的秘密" is prose, "密码是 abc12345" is not.
    _Detector(
        "password", re.compile(rf"(?:{_CJK_WORDS})\s*(?:是|为|為|は|는|은)\s*([!-+\--:<-~]{{4,}})"), _value_ok, 1, _CJK_HINTS
    ),
    _Detector(
        "card_number",
        # A run of 13 to 19 digits, or groups as cards are printed (4-4-4-4, 4-4-4-4-3, 4-4-4-1..4, 4-6-5, 4-6-4,
        # and one digit at a time), each a whole token: never the digits inside a UUID, a hex id or a longer number.
        re.compile(
            rf"{_CARD_START}(?:[2-6][0-9]{{12,18}}|[2-6][0-9]{{3}}(?:{_CARD_SEP}[0-9]{{4}}){{2}}{_CARD_SEP}[0-9]{{1,4}}(?:{_CARD_SEP}[0-9]{{1,3}})?"
            rf"|[2-6][0-9]{{3}}{_CARD_SEP}[0-9]{{6}}{_CARD_SEP}[0-9]{{4,5}}|[2-6](?P<one>[ .\-])[0-9](?:(?P=one)[0-9]){{11,17}}){_CARD_END}"
        ),
        _card_ok,
    ),
)


@dataclass(frozen=True)
class SecretHit:
    kind: str
    start: int
    end: int


def find(text: str) -> list[SecretHit]:
    """Every secret found, in text order, as spans of ``text`` itself; overlapping hits merged into the first."""
    seen = view(text)
    lower = seen.text.lower()
    hits: list[SecretHit] = []
    for det in _DETECTORS:
        if det.hints and not contains_any(lower, det.hints):
            continue
        for m in det.pattern.finditer(seen.text):
            if det.accept is not None and not det.accept(m):
                continue
            start, end = m.span(det.group)
            if start == end:
                continue
            start, end = seen.span(start, end)
            hits.append(SecretHit(det.kind, start, end))
    hits.sort(key=lambda h: (h.start, -h.end))
    merged: list[SecretHit] = []
    for hit in hits:
        if merged and hit.start < merged[-1].end:
            continue
        merged.append(hit)
    return merged


def redact(text: str, hits: list[SecretHit]) -> str:
    """``text`` with each hit replaced by ``[REDACTED:<kind>]``."""
    out, last = [], 0
    for hit in hits:
        out += [text[last : hit.start], f"[REDACTED:{hit.kind}]"]
        last = hit.end
    out.append(text[last:])
    return "".join(out)


def kinds(hits: list[SecretHit]) -> tuple[str, ...]:
    """The kinds of ``hits``, each once, in text order."""
    return tuple(dict.fromkeys(h.kind for h in hits))


def luhn_valid(digits: str) -> bool:
    """The Luhn checksum card numbers carry, so that order ids and phone numbers of the same length pass."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2 == 1:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0 and len(set(digits)) > 1
