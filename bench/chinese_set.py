"""A small Chinese retrieval set: memories about a fictional person, and questions that paraphrase them.

林小雨 (Xiaoyu) is invented. The memories are what an assistant might have
kept about her over a few months: mostly Chinese, some mixing in English
names (Shopify, Duolingo, on-call...). Each question names the memory ids
that answer it; a hit is any of them. Most questions say it in other words
than the memory (坚果 for 花生, 宠物 for 橘猫, 上司 for 经理), two are in
English, and three are bare keywords. Distractors share words or topics with
answers (钢琴 vs 大提琴, the boyfriend's clinic, two allergies).

``WORDS`` checks the keyword channel alone: each word sits *inside* a memory
(花生 in 小雨对花生过敏), so only word-level analysis of Chinese finds it.

Written once, before any measurement; do not edit to fit results.
"""

from __future__ import annotations

from dataclasses import dataclass

NAMESPACE = "zh/xiaoyu"


@dataclass(frozen=True)
class Memory:
    id: str
    text: str
    type: str = "fact"


@dataclass(frozen=True)
class Question:
    text: str
    answers: tuple[str, ...]


MEMORIES: tuple[Memory, ...] = (
    Memory("m01", "小雨对花生过敏，吃了会起疹子，严重时要用肾上腺素笔。"),
    Memory("m02", "她在 Shopify 做后端工程师，主要写 Ruby 和 Go。"),
    Memory("m03", "小雨住在多伦多的 Leslieville，坐有轨电车二十分钟就能到办公室。"),
    Memory("m04", "她养了一只橘猫，名字叫“馒头”，今年三岁。"),
    Memory("m05", "小雨每周日早上沿着安大略湖边跑步，通常跑十公里。"),
    Memory("m06", "她的生日是 3 月 14 日，正好是圆周率日。"),
    Memory("m07", "小雨不喝咖啡，只喝乌龙茶，最喜欢冻顶乌龙。", "preference"),
    Memory("m08", "她的妈妈住在成都，每年春节小雨都会回去看她。"),
    Memory("m09", "小雨最近开始学大提琴，老师姓周，每周四晚上上课。"),
    Memory("m10", "她本科读的是浙江大学计算机系，2017 年毕业。"),
    Memory("m11", "小雨开一辆二手的 Toyota Prius，是去年在 Kijiji 上买的。"),
    Memory("m12", "她最怕蛇，连纪录片里出现蛇都要马上换台。"),
    Memory("m13", "小雨的男朋友阿杰是牙医，他们是在一次攀岩课上认识的。"),
    Memory("m14", "她周末喜欢去 Kensington Market 逛旧货店，收集黑胶唱片。"),
    Memory("m15", "小雨的护照下个月到期，她打算 6 月前去领事馆办新的。"),
    Memory("m16", "她近视六百度，平时戴隐形眼镜，跑步的时候换回框架眼镜。"),
    Memory("m17", "小雨在 Shopify 的经理叫 Priya，两人每两周开一次一对一会议。"),
    Memory("m18", "她的 on-call 轮值排在每个月的第一周。"),
    Memory("m19", "小雨已经吃素两年了，不过偶尔还会吃鱼。", "preference"),
    Memory("m20", "她计划今年十月和阿杰一起去京都看红叶。"),
    Memory("m21", "小雨的弟弟小川在上海读研究生，学的是金融。"),
    Memory("m22", "她最喜欢的作家是村上春树，书架上摆了一整排他的小说。", "preference"),
    Memory("m23", "小雨租的公寓每月 2400 加元，租约明年 8 月到期。"),
    Memory("m24", "她在用 Duolingo 学法语，已经连续打卡 300 天。"),
    Memory("m25", "小雨对猫毛没有反应，但对尘螨有轻微的过敏。"),
    Memory("m26", "她上班用公司配的 MacBook Pro，家里是一台自己组装的 Linux 台式机。"),
    Memory("m27", "小雨每周三晚上在社区中心给小朋友上中文课，是志愿者。"),
    Memory("m28", "她的血型是 O 型。"),
    Memory("m29", "小雨讨厌香菜，点外卖时总会备注“不要香菜”。", "preference"),
    Memory("m30", "她最近在准备 AWS Solutions Architect 认证，考试定在 5 月。"),
    Memory("m31", "小雨每天早上七点起床，先冥想十分钟再做早饭。"),
    Memory("m32", "她的好朋友 Emily 是护士，住在温哥华。"),
    Memory("m33", "小雨小时候在成都学过四年钢琴，后来就没再弹了。"),
    Memory("m34", "她的 GitHub 用户名是 rainlin-dev。"),
    Memory("m35", "小雨去年冬天滑雪时摔断了左手腕，现在已经恢复了。"),
    Memory("m36", "阿杰的诊所在 North York，他周六也要上班。"),
)

QUESTIONS: tuple[Question, ...] = (
    Question("小雨不能吃哪种坚果？", ("m01",)),
    Question("她在哪家公司上班？", ("m02", "m17")),
    Question("小雨家的宠物叫什么名字？", ("m04",)),
    Question("她一般什么时候去锻炼？", ("m05",)),
    Question("小雨哪天过生日？", ("m06",)),
    Question("她平时喝什么饮料提神？", ("m07",)),
    Question("小雨现在在学哪种乐器？", ("m09",)),
    Question("Where did Xiaoyu go to university?", ("m10",)),
    Question("她的车是什么牌子的？", ("m11",)),
    Question("小雨最害怕哪种动物？", ("m12",)),
    Question("她男朋友是做什么工作的？", ("m13", "m36")),
    Question("小雨的哪个证件快要过期了？", ("m15",)),
    Question("她的视力好不好？", ("m16",)),
    Question("小雨的上司是谁？", ("m17",)),
    Question("她吃肉吗？", ("m19",)),
    Question("小雨秋天打算去哪里旅游？", ("m20",)),
    Question("她每个月房租多少钱？", ("m23",)),
    Question("小雨有哪些过敏？", ("m01", "m25")),
    Question("小雨哪一周需要值班？", ("m18",)),
    Question("她受过什么伤？", ("m35",)),
    Question("小雨的家人都住在哪里？", ("m08", "m21")),
    Question("What programming languages does she use at work?", ("m02",)),
    Question("小雨业余时间做什么公益活动？", ("m27",)),
    Question("她在考什么证书？", ("m30",)),
    Question("小雨讨厌吃哪种菜？", ("m29",)),
    # Keyword-style queries, as an agent looking up a name or a handle would send.
    Question("花生", ("m01",)),
    Question("Duolingo", ("m24",)),
    Question("rainlin-dev", ("m34",)),
)

#: Words that occur only inside longer Chinese runs of their memory, for the keyword channel alone.
WORDS: tuple[Question, ...] = (
    Question("花生", ("m01",)),
    Question("橘猫", ("m04",)),
    Question("大提琴", ("m09",)),
    Question("护照", ("m15",)),
    Question("红叶", ("m20",)),
    Question("香菜", ("m29",)),
    Question("冥想", ("m31",)),
    Question("手腕", ("m35",)),
)


def check() -> None:
    """Every answer id names a memory; ids are unique."""
    ids = [m.id for m in MEMORIES]
    assert len(ids) == len(set(ids)), "duplicate memory ids"
    for q in (*QUESTIONS, *WORDS):
        unknown = set(q.answers) - set(ids)
        assert not unknown, f"{q.text!r} names unknown memories {sorted(unknown)}"


check()
