"""Rules that recognise instruction-like memory content: text aimed at the model that will read it.

A memory is data; when a model later reads it back it may take it as an
order ("SYSTEM: ignore previous instructions"). These rules mark such
content so readers can see it, filter it out, or have it quarantined
(memhub/core/screening.py). They are deliberately narrow: each one names a
construction that ordinary notes and conversation turns rarely use
(overriding earlier instructions, chat-template role markers, tool-call
syntax, requests to hide things from the user or leak secrets), because a
flag on ordinary memories would teach readers to ignore the flag.
bench/bench_injection_flags.py measures both sides: the share of a battery
of injection texts flagged and the false-flag rate on LoCoMo turns.

They are a tripwire, not a guarantee: a paraphrase can pass them. The
rendering of memories (memhub/memory_text.py) and the writer's trust level
are the other layers.
"""

# ruff: noqa: E501 - one rule per line reads better than regexes cut mid-alternation

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from memhub.core.regex_needs import Needs, foldable, may_match, needs


@dataclass(frozen=True)
class Rule:
    name: str
    pattern: re.Pattern[str]
    needs: Needs
    """Literals a match must contain (memhub/core/regex_needs.py): a text without them skips the pattern."""


def _rule(name: str, pattern: str) -> Rule:
    compiled = re.compile(pattern, re.IGNORECASE | re.MULTILINE)
    return Rule(name, compiled, needs(compiled))


_PRIOR = r"(?:previous|prior|preceding|earlier|above|foregoing|original|initial|existing|your|the|all|any|these|those)"
_ORDERS = r"(?:instructions?|prompts?|rules|directions|directives|guidelines|guidance|orders|commands|context|constraints|restrictions|policies|programming)"

RULES: tuple[Rule, ...] = (
    # "ignore previous instructions", "disregard all prior rules", "forget everything above".
    _rule(
        "override-instructions",
        rf"\b(?:ignore|disregard|forget|override|bypass|skip|drop|abandon)\s+(?:(?:all|any|every|each|of|the|your|my)\s+)*"
        rf"(?:{_PRIOR}\s+)+(?:(?:system|safety|user|developer)\s+)?{_ORDERS}\b",
    ),
    _rule(
        "override-everything",
        r"\b(?:ignore|disregard|forget)\s+(?:everything|anything|all)\s+(?:above|before|previously|you\s+were\s+told)\b",
    ),
    # Chat-template and role markers that open a turn of another speaker.
    _rule(
        "template-token",
        r"<\|(?:im_start|im_end|system|user|assistant|endoftext|eot_id|start_header_id|end_header_id|tool_call)\|>"
        r"|\[/?INST\]|<</?SYS>>|</?s>\s*\[INST",
    ),
    _rule(
        "role-marker",
        r"^\s*(?:[\[<](?:system|assistant|developer)[\]>]|#{1,4}\s*(?:system|assistant|developer)\s*$"
        r"|(?:system|assistant|developer)\s*[:：]\s*\S)",
    ),
    _rule("role-tag", r"</?(?:system|assistant|developer|system_prompt|instructions?)>"),
    # Re-assigning the reader's role.
    _rule("new-role", r"\byou\s+are\s+now\s+(?:a|an|the|in|my|no\s+longer|free|unrestricted|DAN)\b"),
    _rule(
        "from-now-on",
        r"\bfrom\s+now\s+on,?\s+(?:you|the\s+(?:assistant|ai|model|agent))\s+(?:will|must|shall|should|are|have\s+to)\b",
    ),
    _rule(
        "new-instructions",
        r"\b(?:new|updated|real|actual|hidden|secret)\s+(?:system\s+)?(?:instructions?|system\s+prompt|directives?)\s*(?::|：|follow|are|is)",
    ),
    _rule("system-prompt", r"\b(?:system\s+prompt|developer\s+mode|jailbreak|do\s+anything\s+now)\b"),
    _rule(
        "pretend",
        r"\b(?:pretend|act)\s+(?:to\s+be|that\s+you\s+are|as\s+if\s+you\s+(?:are|were)|as\s+an?\s+(?:unrestricted|unfiltered|evil))\b",
    ),
    # Orders addressed to the model that reads the memory.
    _rule(
        "addressed-to-model",
        r"\b(?:(?:attention|note|message|instruction|important)\s*(?:to|for)\s*(?:the\s+|any\s+)?(?:ai|assistant|llm|language\s+model|agent|model)s?"
        r"|(?:dear|hey|hi)\s+(?:ai|assistant|llm|chatbot)"
        r"|(?:when|if|whenever)\s+(?:you|an?\s+(?:ai|assistant|agent|model))\s+(?:read|reads|see|sees|recall|recalls|retrieve|retrieves|find|finds)\s+this)\b",
    ),
    _rule(
        "model-must",
        r"\b(?:the|any|every)\s+(?:ai|assistant|llm|language\s+model|agent|model)\s+(?:must|should|shall|will)\s+(?:now\s+|always\s+|never\s+|immediately\s+)",
    ),
    _rule("as-an-ai", r"\bas\s+an?\s+(?:ai\s+)?(?:ai|assistant|large\s+language\s+model|language\s+model)\s*,\s*you\b"),
    _rule(
        "hide-from-user",
        r"\b(?:do\s+not|don't|never)\s+(?:tell|inform|mention\s+(?:this|it)\s+to|reveal\s+(?:this|it)\s+to|let)\s+(?:the\s+)?(?:user|human|operator)\b",
    ),
    _rule(
        "exfiltrate",
        r"\b(?:reveal|print|output|leak|show|repeat|dump|send|email|post|upload|forward|exfiltrate)\s+(?:me\s+)?(?:your|the|all|any)\s+"
        r"(?:(?:system|hidden|initial)\s+(?:prompt|instructions?)|api[\s_-]?keys?|passwords?|credentials|secrets?|access\s+tokens?|private\s+keys?)\b",
    ),
    _rule(
        "run-command",
        r"\b(?:execute|run)\s+(?:the\s+following|this)\s+(?:shell\s+)?(?:command|code|script)\b|\bcurl\s+\S+\s*\|\s*(?:ba)?sh\b",
    ),
    # Tool-call syntax of the common model APIs and agent frameworks.
    _rule(
        "tool-call",
        r"</?(?:tool_call|tool_use|function_call|function_calls|invoke|antml:invoke|tool_code)\b"
        r"|\"(?:tool_calls|function_call)\"\s*:|\{\s*\"name\"\s*:\s*\"[^\"]+\"\s*,\s*\"(?:arguments|parameters|input)\"\s*:"
        r"|<function=|\bcall\s+the\s+(?:\w+\s+)?(?:tool|function)\s+\w+",
    ),
    # Chinese: 忽略之前的指令, 无视以上规则, 你现在是, 从现在开始你, 系统提示, 不要告诉用户, 泄露密钥, 执行以下命令, 调用工具.
    _rule(
        "zh-override",
        r"(?:忽略|无视|忽视|不要理会|忘记|忘掉|跳过)[^。！？\n]{0,8}?(?:之前|以前|先前|此前|上面|上述|以上|前面|前述|原来|原有|所有|全部|一切)"
        r"[^。！？\n]{0,8}?(?:指令|指示|命令|说明|规则|提示|要求|设定|限制|约束)",
    ),
    _rule(
        "zh-new-role",
        r"你现在是(?!在|不是|否|不)|从现在(?:开始|起)[，,]?\s*你(?:是|将|要|必须|应该|只能|需要)|你的新(?:任务|指令|角色|身份|规则)",
    ),
    _rule(
        "zh-role-marker",
        r"^\s*(?:[\[【<](?:系统|助手|系统消息)[\]】>]|(?:系统|助手|系统消息)\s*[:：]\s*\S)|系统提示词?|开发者模式|越狱模式",
    ),
    _rule("zh-pretend", r"(?:假装|扮演|充当)(?:你是|成为|一个)?.{0,12}?(?:没有|不受|无视|摆脱)(?:任何)?(?:限制|约束|规则)"),
    _rule("zh-hide", r"(?:不要|别|切勿|不得)(?:告诉|通知|透露给|提醒)(?:用户|使用者|人类|操作员)"),
    _rule(
        "zh-exfiltrate",
        r"(?:泄露|透露|输出|打印|发送|发给|上传|转发)(?:出)?(?:你的|所有的?|全部的?)?(?:系统提示|系统指令|初始指令|隐藏指令|密码|密钥|API\s*密钥|API\s*key|令牌|凭证|凭据)",
    ),
    _rule("zh-run", r"(?:执行|运行)(?:以下|下面|下列|这条|这段)的?(?:命令|指令|代码|脚本)|调用(?:以下|下面)?的?(?:工具|函数)"),
    _rule(
        "zh-addressed",
        r"(?:致|给|对)(?:(?:AI|人工智能)(?:助手|模型|智能体)?|助手|模型|智能体)的?(?:指令|消息|提示)|(?:当|如果)(?:你|AI|助手|模型)(?:读到|看到|检索到|回忆起)(?:这条|这段|此)",
    ),
)


# Every character str.splitlines() breaks at, and with it many readers: the rules anchored at a line start
# (role markers, "SYSTEM:") must see "ok\u2028SYSTEM: ..." as the second line it shows as.
_LINE_BREAKS = str.maketrans(dict.fromkeys("\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029", "\n"))


def _normalised(text: str) -> str:
    # NFKC folds full-width letters and look-alike compatibility forms ("ＳＹＳＴＥＭ") onto the plain ones;
    # line and paragraph separators become "\n"; format characters (zero-width, bidi controls) inserted to split
    # a keyword ("ig\u200bnore") or to hide a line start are removed.
    if text.isascii():  # most text: NFKC changes no ASCII character and none of them is a format character
        return text.translate(_LINE_BREAKS)
    folded = unicodedata.normalize("NFKC", text).translate(_LINE_BREAKS)
    return "".join(ch for ch in folded if unicodedata.category(ch) != "Cf")


def matching_rules(text: str) -> tuple[str, ...]:
    """Names of the rules the text matches, in rule order (empty: not instruction-like)."""
    normal = _normalised(text)
    folded = foldable(normal)
    return tuple(rule.name for rule in RULES if may_match(rule.needs, folded) and rule.pattern.search(normal))


def is_instruction_like(text: str) -> bool:
    """True when some rule matches: the text addresses the model that will read it."""
    normal = _normalised(text)
    folded = foldable(normal)
    for rule in RULES:  # a loop rather than any(<generator>): it runs on every write
        if may_match(rule.needs, folded) and rule.pattern.search(normal):
            return True
    return False
