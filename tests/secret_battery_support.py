"""The obfuscation battery of the secret scan: for each detector, secrets made fresh for the run and the variants an
attacker writes to get them past it (tests/security/test_secret_obfuscation.py, bench/bench_secret_false_flags.py).

Each case is a whole field value: ``before + variant + after`` around a secret whose ``core`` (the part that makes it
usable) must never be stored. Variants: invisible characters inserted after the first character, in the middle,
before the last and between every pair; separators and spacing (card groups, spaces around a JWT's dots or inside a
key's armor); case; full-width and other-script forms that NFKC or the digit folding turn back into the secret.
"""

from __future__ import annotations

import base64
import functools
import json
import random
import string
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

INVISIBLES = {
    "zwsp": "\u200b",
    "zwnj": "\u200c",
    "zwj": "\u200d",
    "word-joiner": "\u2060",
    "bom": "\ufeff",
    "soft-hyphen": "\u00ad",
    "rtl-override": "\u202e",
    "invisible-times": "\u2062",
    "tag-space": "\U000e0020",
    "variation-selector": "\ufe0f",
    "mongolian-vowel-separator": "\u180e",
}
BEFORE = "Note for ops: "
AFTER = " (rotate it monthly)."


@dataclass(frozen=True)
class Case:
    detector: str
    variant: str
    secret: str
    """The obfuscated secret alone (a tag's value)."""
    core: str
    """What must never be stored, compared after ``squash``."""
    context: bool = True
    """Whether BEFORE and AFTER must come through untouched (False where the secret runs to the end of the text)."""

    @property
    def text(self) -> str:
        """The field value: BEFORE + the obfuscated secret + AFTER."""
        return BEFORE + self.secret + AFTER


@functools.lru_cache(maxsize=65536)  # a battery checks every stored value against every case: squash each once
def squash(text: str) -> str:
    """Letters and digits only, NFKC-folded, case-folded, invisible characters dropped: the secret's core is not in
    the squashed stored text however it was spaced, split or re-cased."""
    folded = unicodedata.normalize("NFKC", text)
    out = []
    for ch in folded:
        if unicodedata.category(ch) == "Nd":
            out.append(str(unicodedata.decimal(ch)))
        elif ch.isalnum():
            out.append(ch.casefold())
    return "".join(out)


def _rand(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _luhn_complete(prefix: str, length: int, rng: random.Random) -> str:
    body = prefix + _rand(rng, string.digits, length - len(prefix) - 1)
    for check in string.digits:
        digits = body + check
        total = sum((d * 2 - 9 if d * 2 > 9 else d * 2) if i % 2 else d for i, d in enumerate(int(c) for c in reversed(digits)))
        if total % 10 == 0:
            return digits
    raise AssertionError("unreachable: one check digit always fits")


def _insertions(secret: str) -> dict[str, str]:
    """The secret with an invisible character after the first character, in the middle, before the last, everywhere."""
    out = {}
    mid = len(secret) // 2
    for name, ch in INVISIBLES.items():
        out[f"{name}@first"] = secret[:1] + ch + secret[1:]
        out[f"{name}@middle"] = secret[:mid] + ch + secret[mid:]
        out[f"{name}@last"] = secret[:-1] + ch + secret[-1:]
        out[f"{name}@every"] = ch.join(secret)
    return out


def _fullwidth(text: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)


_ARABIC_INDIC = str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")
_DEVANAGARI = str.maketrans("0123456789", "०१२३४५६७८९")


@cache
def _pem_key() -> tuple[str, str]:
    """(PEM text, base64 body) of a fresh RSA key: a real key's first bytes are what the bare-body detector knows."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=1024)
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
    ).decode()
    body = "".join(pem.strip().splitlines()[1:-1])
    return pem.strip(), body


def _b64(obj: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()


def cases(seed: int | None = None) -> list[Case]:
    """Every case of the battery, secrets fresh for ``seed`` (random when None)."""
    rng = random.Random(seed)
    alnum = string.ascii_letters + string.digits
    out: list[Case] = []

    def add(detector: str, secret: str, core: str, extra: dict[str, str], *, invisible: bool = True) -> None:
        variants = {"plain": secret, **extra}
        if invisible:
            variants.update(_insertions(secret))
        for name, text in variants.items():
            out.append(Case(detector, name, text, core))

    aws_body = _rand(rng, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 15) + rng.choice("234567")
    aws = "AKIA" + aws_body
    groups = " ".join([aws[i : i + 4] for i in range(0, 20, 4)])
    add(
        "aws_access_key",
        aws,
        aws_body,
        {
            "lower": aws.lower(),
            "title": aws.title(),
            "grouped-spaces": groups,
            "grouped-dashes": groups.replace(" ", "-"),
            "fullwidth": _fullwidth(aws),
            "asia": "ASIA" + aws_body,
        },
    )
    gh = "ghp_" + _rand(rng, alnum, 36)
    add("github_token", gh, gh[4:], {"upper-prefix": "GHP_" + gh[4:], "fullwidth": _fullwidth(gh)})
    slack = f"xoxb-{_rand(rng, string.digits, 12)}-{_rand(rng, string.digits, 12)}-{_rand(rng, alnum, 24)}"
    add("slack_token", slack, slack[5:], {"upper-prefix": "XOXB-" + slack[5:], "fullwidth": _fullwidth(slack)})
    openai = "sk-proj-" + _rand(rng, alnum, 40)
    add("openai_key", openai, openai[8:], {"upper-prefix": "SK-PROJ-" + openai[8:], "fullwidth": _fullwidth(openai)})
    stripe = "sk_live_" + _rand(rng, alnum, 24)
    add("stripe_key", stripe, stripe[8:], {"upper-prefix": "SK_LIVE_" + stripe[8:], "fullwidth": _fullwidth(stripe)})
    google = "AIza" + _rand(rng, alnum + "_-", 35)
    add("google_api_key", google, google[4:], {"lower-prefix": "aiza" + google[4:], "fullwidth": _fullwidth(google)})

    head, payload, sig = _b64({"alg": "HS256", "typ": "JWT"}), _b64({"sub": _rand(rng, alnum, 12)}), _rand(rng, alnum, 43)
    jwt = f"{head}.{payload}.{sig}"
    add(
        "jwt",
        jwt,
        payload + sig,
        {
            "spaces-around-dots": f"{head} . {payload} . {sig}",
            "space-after-dots": f"{head}. {payload}. {sig}",
            "newlines-around-dots": f"{head}\n.\n{payload}\n.\n{sig}",
            "ideographic-dots": f"{head}。{payload}。{sig}",
            "fullwidth-dots": f"{head}．{payload}．{sig}",
        },
    )

    pem, body = _pem_key()
    lines = pem.splitlines()
    armor_body = "\n".join(lines[1:-1])
    pem_variants = {
        "space-after-dashes": "----- BEGIN RSA PRIVATE KEY-----\n" + armor_body + "\n-----END RSA PRIVATE KEY-----",
        "spaces-in-armor": "-----BEGIN  RSA PRIVATE KEY -----\n" + armor_body + "\n----- END RSA PRIVATE KEY -----",
        "lower-armor": "-----begin rsa private key-----\n" + armor_body + "\n-----end rsa private key-----",
        "four-dashes": "----BEGIN RSA PRIVATE KEY----\n" + armor_body + "\n----END RSA PRIVATE KEY----",
        "crlf": pem.replace("\n", "\r\n"),
        "no-armor": armor_body,
        "mangled-armor": "-- BEGIN-RSA-PRIVATE-KEY --\n" + armor_body + "\n-- END-RSA-PRIVATE-KEY --",
        "one-line-body": "-----BEGIN RSA PRIVATE KEY----- " + body + " -----END RSA PRIVATE KEY-----",
    }
    add("private_key", pem, body, pem_variants, invisible=False)
    for name, ch in INVISIBLES.items():  # inside the armor words, where the old pattern broke
        text = pem.replace("BEGIN", "BE" + ch + "GIN").replace("PRIVATE", "PRI" + ch + "VATE")
        out.append(Case("private_key", f"{name}@armor", text, body))
    out.append(Case("private_key", "no-end-line", "\n".join(lines[:-1]), body, context=False))

    visa = _luhn_complete("4", 16, rng)
    amex = _luhn_complete("37", 15, rng)
    grouped = [visa[i : i + 4] for i in range(0, 16, 4)]
    card_variants = {
        "spaces": " ".join(grouped),
        "dashes": "-".join(grouped),
        "dots": ".".join(grouped),
        "slashes": "/".join(grouped),
        "underscores": "_".join(grouped),
        "spaced-dashes": " - ".join(grouped),
        "double-spaces": "  ".join(grouped),
        "nbsp": "\u00a0".join(grouped),
        "ideographic-space": "\u3000".join(grouped),
        "middle-dots": "·".join(grouped),
        "one-digit-spaced": " ".join(visa),
        "fullwidth": _fullwidth(visa),
        "arabic-indic": visa.translate(_ARABIC_INDIC),
        "devanagari": visa.translate(_DEVANAGARI),
        "amex-4-6-5": f"{amex[:4]} {amex[4:10]} {amex[10:]}",
        "amex-plain": amex,
    }
    for name, ch in INVISIBLES.items():
        card_variants[f"{name}@groups"] = ch.join(grouped)
    add("card_number", visa, visa, {k: v for k, v in card_variants.items() if not k.startswith("amex")})
    out.extend(Case("card_number", k, v, amex) for k, v in card_variants.items() if k.startswith("amex"))

    password = "Hx7" + _rand(rng, string.ascii_lowercase + string.digits, 9)
    forms = {
        "assign": f"password={password}",
        "colon": f"password: {password}",
        "upper": f"PASSWORD = {password}",
        "quoted-json": f'"password": "{password}"',
        "env-prefix": f"DB_PASSWORD={password}",
        "aws-secret": f"aws_secret_access_key={password}",
        "fullwidth-colon": f"password：{password}",
        "prose-is": f"the password is {password}",
        "prose-was": f"my password was {password}",
        "prose-for": f"the password for the vault is {password}",
        "prose-quoted": f'the password is "{password.lower()}"',
        "de-passwort": f"Passwort: {password}",
        "de-lautet": f"das Passwort lautet {password}",
        "de-kennwort": f"Kennwort={password}",
        "fr": f"mot de passe : {password}",
        "fr-prose": f"le mot de passe est {password}",
        "es": f"contraseña: {password}",
        "es-prose": f"la contraseña es {password}",
        "pt": f"senha: {password}",
        "nl": f"wachtwoord: {password}",
        "sv": f"lösenord: {password}",
        "fi": f"salasana: {password}",
        "pl": f"hasło: {password}",
        "cs": f"heslo: {password}",
        "tr": f"şifre: {password}",
        "ru": f"пароль: {password}",
        "ru-prose": f"пароль это {password}",
        "el": f"κωδικός: {password}",
        "ar": f"كلمة المرور: {password}",
        "hi": f"पासवर्ड: {password}",
        "vi": f"mật khẩu: {password}",
        "id": f"kata sandi: {password}",
        "zh": f"密码是 {password}",
        "zh-colon": f"密码：{password}",
        "zh-traditional": f"密碼是{password}",
        "ja": f"パスワードは {password}",
        "ko": f"비밀번호: {password}",
        "url": f"postgres://app:{password}@db.internal:5432/prod",
        "bearer": f"Authorization: Bearer {password}{_rand(rng, alnum, 20)}",
    }
    for name, text in forms.items():
        out.append(Case("password", name, text, password))
    for name, ch in INVISIBLES.items():
        out.append(Case("password", f"{name}@keyword", f"pass{ch}word={password}", password))
        out.append(Case("password", f"{name}@value", f"password={password[:4]}{ch}{password[4:]}", password))
        out.append(Case("password", f"{name}@every", ch.join(f"password is {password}"), password))
    return out


def stored_leaks(stored: str, case: Case) -> bool:
    """Whether ``stored`` still holds the case's secret in any spelling."""
    return squash(case.core) in squash(stored)


def context_intact(stored: str, case: Case, before: str = BEFORE, after: str = AFTER) -> bool:
    """The text around the secret came through as it was, and says a secret was there."""
    if not case.context:
        return stored.startswith(before) and "[REDACTED:" in stored
    return stored.startswith(before) and stored.endswith(after) and "[REDACTED:" in stored


def fits(case: Case, check: Callable[[str], object]) -> bool:
    """Whether a field's own validation accepts the case (a tag holds no spaces; an entity at most 128 characters)."""
    try:
        check(case.text)
    except Exception:  # noqa: BLE001 - any refusal means the field cannot carry this variant
        return False
    return True
