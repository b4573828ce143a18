"""Simplified Chinese -> Traditional Chinese as Taiwan writes it, for the zh-TW edition.

OpenCC's ``s2twp`` converts characters and everyday computing words (記憶體, 程式碼,
叢集). It does not know this course's vocabulary, and its word segmentation makes a few
plain character errors. So the conversion here is three steps, all reviewed by reading
the output against the MIT notes in Traditional Chinese (seed 000):

1. On the zh-CN text, before OpenCC: column and row. Simplified writes 列 for a column
   and 行 for a row; Taiwan writes 欄 for a column and 列 for a row. Every 列 that is a
   column becomes 欄, and every 行 that is a row becomes 列, while 行 stays for a line of
   text or code (Taiwan writes 第 3 行 too) and inside words (執行, 平行). The same step
   protects words whose s2twp rendering is another sense (:data:`SOURCE_TERMS`).
2. OpenCC ``s2twp``.
3. The phrase table :data:`TAIWAN`: the course's terms as the Traditional notes write
   them (資料平行, 管線平行, 運算子), Taiwan's everyday words where s2twp leaves the
   mainland's (投影片, 套件, 儲存格), fixes for s2twp's segmentation errors (隻 for 只,
   里 for 裡), and 「」 quotes.

Used by :mod:`companion.tools.i18n_build`; tests/test_zh_tw.py holds the output to a list
of mainland-only terms and conversion errors kept apart from this table.
"""
from __future__ import annotations

import re
import sys

__all__ = ["converter", "swap_columns_and_rows", "SOURCE_TERMS", "TAIWAN"]

# zh-CN words whose s2twp rendering is a different sense here, written as Taiwan
# writes this course's sense. Longest first, so a phrase wins over its parts.
SOURCE_TERMS = {
    "参数": "參數",           # a model's parameter (s2twp: 引數, a function's argument)
    "激活": "激活",           # an activation (s2twp: 啟用, "enabling")
    "仿真": "仿真",           # emulated (s2twp merges it with 模拟, simulated)
    "进程": "行程",           # an OS process (s2twp: 程序, which Taiwan reads "procedure")
    # a GPU kernel keeps its English name: s2twp's 核心 is also a CPU core here
    "GPU 内核（kernel）": "GPU kernel",
    "GPU 内核": "GPU kernel", "CUDA 内核": "CUDA kernel", "融合内核": "融合 kernel",
    "张量核心内核": "Tensor Core kernel", "真实的内核": "真實的 kernel",
    "DualPipe 的内核": "DualPipe 的 kernel", "内核启动": "kernel 啟動",
    "内核效率": "kernel 效率", "张量核心（tensor core）内核": "張量核心（tensor core）kernel",
    "内核": "kernel",
    # a Jupyter kernel is 核心, as Jupyter's own zh-TW interface writes it
    "中断内核": "中斷核心", "全新的内核": "全新的核心", "正在运行的内核": "正在執行的核心",
    "笔记本内核": "筆記本核心", "笔记本的内核": "筆記本的核心", "从内核中": "從核心中",
    "内核自动": "核心自動", "内核的工作目录": "核心的工作目錄", "停止内核": "停止核心",
    "在内核里": "在核心裡", "让内核崩溃": "讓核心當掉", "脱离内核": "脫離核心",
}

# Where 行 is a line of text or code, or part of a word, not a table's or matrix's row.
LINE_SENSE = ("出错的那一行", "输出的第一行", "几十行", "打印的第一行", "判定的第一行",
              "行号", "换行", "行不通", "也能行", "不行", "就行", "一行代码", "行内", "进度行")
_ROW = re.compile(r"(?<![并执运进流可实举先同例发航旅步平自推试另践银单])行"
                  r"(?![为动业程事驶走李人政不号内])")
_COLUMN = re.compile(r"(?<![序排并队罗陈系])列(?![表出举入为了])")

# After s2twp, in order (a phrase before the words inside it).
TAIWAN = (
    # the course's own terms, as the MIT notes in Traditional Chinese write them
    ("並行", "平行"), ("流水線", "管線"), ("運算元", "運算子"), ("運運算子", "運算子"),
    ("全規約", "全歸約"), ("規約散射", "歸約散射"), ("規約-散射", "歸約散射"),
    ("規約", "歸約"), ("推理", "推論"), ("閾值", "門檻"), ("記賬", "記帳"), ("賬", "帳"),
    # s2twp's renderings that are mainland or another sense in Taiwan
    ("全域性", "全域"), ("區域性", "局部"), ("網絡卡", "網路卡"), ("網絡", "網路"),
    ("幻燈片", "投影片"), ("軟體包", "套件"), ("單元格", "儲存格"),
    ("本幫助資訊", "這則說明訊息"), ("幫助資訊", "說明訊息"), ("字面量", "字面值"),
    ("視訊記憶體", "記憶體"), ("丟擲", "拋出"), ("異常", "例外"), ("例外值", "異常值"),
    ("交換機", "交換器"), ("倉庫", "儲存庫"), ("返回值", "回傳值"), ("返回", "傳回"),
    ("示例", "範例"), ("例項", "實例"), ("回撥", "回呼"), ("平臺", "平台"),
    ("計算機", "電腦"), ("互聯", "互連"), ("時延", "延遲"), ("常量", "常數"),
    ("反饋", "回饋"), ("批大小", "批次大小"), ("質量", "品質"), ("列表", "串列"),
    ("控制元件", "控制項"), ("小部件", "控制項"), ("打印出", "印出"), ("打印", "印出"),
    ("擴充套件", "擴展"), ("筆記本電腦", "筆記型電腦"), ("這檯", "這臺"), ("到這檯", "到這臺"), ("運行", "執行"),
    ("實現", "實作"), ("文本", "文字"), ("默認", "預設"),
    ("錯誤演示", "錯誤示範"), ("下面演示", "下面示範"), ("演示", "簡報"),   # a demonstration, not slides
    ("報錯", "出錯"), ("拖動", "拖曳"), ("滑塊", "滑桿"), ("所有依賴", "所有相依套件"),
    ("上通過 gloo", "上透過 gloo"), ("訪問", "存取"), ("構建", "建構"), ("顯式", "明確"),
    ("下拉框", "下拉式選單"), ("寫盤", "寫入磁碟"), ("時間視窗", "時間區間"),
    ("泊松", "卜瓦松"), ("噪聲", "雜訊"), ("最小二乘", "最小平方"), ("方差", "變異數"),
    ("溢位的部分", "溢出的部分"), ("溢位容量", "超出容量"),   # tokens over capacity, not a number's overflow
    ("批歸一化", "批次正規化"), ("歸一化", "正規化"), ("流式多處理器", "串流多處理器"), ("掩碼", "遮罩"), ("超時", "逾時"),
    ("搭建", "建構"), ("搭出", "組出"), ("復現", "重現"),
    ("隨機數生成器", "亂數產生器"), ("隨機數", "亂數"), ("退出碼", "結束代碼"), ("自定義", "自訂"),
    ("棧幀", "堆疊框架"), ("標量", "純量"), ("識別符號", "識別字"), ("源文字", "原始文字"),
    ("會話", "工作階段"), ("在終端中", "在終端機中"), ("OFL 許可", "OFL 授權"), ("註釋", "註解"),
    ("複用", "重複使用"), ("遞推", "遞迴"), ("下標", "索引"), ("萬億", "兆"), ("算例", "計算範例"),
    ("套接字", "通訊端"), ("兆位元", "百萬位元"), ("拼接", "串接"), ("計劃", "計畫"),
    ("兩條命令", "兩個指令"), ("子命令", "子指令"), ("配置好", "設定好"), ("的幫助和", "的說明和"),
    ("錯誤資訊", "錯誤訊息"), ("例外資訊", "例外訊息"), ("預檢資訊", "預檢訊息"),
    ("Error` 資訊", "Error` 訊息"), ("Optimizer 類，", "Optimizer 類別，"), ("（類本身", "（類別本身"),
    # the measure word for a GPU or a NIC where the noun is left out
    ("驅動自己的一塊", "驅動自己的一張"), ("每個成員一塊", "每個成員一張"),
    ("只驅動 4 塊", "只驅動 4 張"), ("一萬六千塊", "一萬六千張"), ("} 塊都跑滿", "} 張都跑滿"),
    ("只驅動一塊", "只驅動一張"), ("8 時，只有一塊", "8 時，只有一張"), ("一塊以其", "一張以其"),
    ("放在下一塊上", "放在下一張上"), ("GPU 一塊 {", "GPU 一張 {"), ("GPU，每塊 {", "GPU，每張 {"),
    ("一塊 400 Gb/s 的 ConnectX", "一張 400 Gb/s 的 ConnectX"), ("_node} 塊 {", "_node} 張 {"),
    ("每個 rank 一塊（", "每個 rank 一張（"), ("每個 rank 一塊，", "每個 rank 一張，"),
    # s2twp's segmentation errors
    ("隻", "只"), ("上覆制", "上複製"), ("覆制", "複製"), ("覆現", "重現"),
    ("髮", "發"), ("個數據", "個資料"), ("數據", "資料"), ("複制", "複製"), ("牆鍾", "牆鐘"),
    ("舍入", "捨入"), ("活可干", "活可幹"), ("文字身", "文本身"), ("錶格", "表格"), ("寫明瞭", "寫明了"),
    ("嚐試", "嘗試"), ("線上路上", "在線路上"), ("註意", "注意"), ("采用", "採用"),
    ("箇中文", "個中文"),
    # the Traditional notes' term (seed 000 writes 集體通訊), and Taiwan's everyday words
    ("集合通訊", "集體通訊"), ("編寫", "撰寫"), ("十進位制", "十進位"), ("二進位制", "二進位"),
    ("留出集", "保留集"),
    ("整陣列成", "整數組成"), ("計陣列成", "計數組成"), ("的前欄", "的前列"),   # 名列前茅, not a column
    ("32 位數值", "32 位元數值"), ("帶重新整理", "帶排空"),   # a pipeline flush, not a refresh
    ("併為", "並為"), ("張量併發送", "張量並發送"), ("併發執行", "同時執行"), ("**併發**執行", "**同時**執行"), ("併行", "平行"),
    # a notebook's cell (單元 alone stays: an FSDP unit, a hidden unit)
    ("程式碼單元", "程式碼儲存格"), ("markdown 單元", "markdown 儲存格"), ("自檢單元", "自檢儲存格"),
    ("替換後的單元", "替換後的儲存格"),
    ("上（每塊", "上（每張"), ("每個節點 8 塊）", "每個節點 8 張）"),
    ("GPU 上要 256 塊）", "GPU 上要 256 張）"), ("塊資料平行的 GPU", "張資料平行的 GPU"),
    ("Transformer 塊", "Transformer 區塊"), ("transformer 塊", "transformer 區塊"),
)
# The measure word: Taiwan counts GPUs and network cards with 張 and chips with 顆
# (s2twp keeps the mainland's 塊, which stays for a chunk of a tensor).
_CARD = re.compile(r"塊(?=\s*(?:GPU|TPU|[HABV]\d00|網路卡|\d+\s*GB))"
                   r"|(?<!這一)(?<!那一)(?:(?<=[一每\d])|(?<=\d\s))塊(?=[^。，；：（）()、\n塊]{1,24}?(?:GPU|[HABV][18]00|網路卡))")
_CHIP = re.compile(r"塊(?=\s*晶片)")
# a CPU core is 核心 in Taiwan (the mainland's 核 alone reads as a nucleus)
_CORE = re.compile(r"(?<=CPU )核(?!心)|(?<=幾個)核(?!心)|(?<=[臺台器的])核(?=數)|(?<=\d )核(?=機器)")
_LI = re.compile(r"(?<![公英海千阿])里(?![程])")
# 通過 is "by way of" (Taiwan: 透過) unless a test or a check passes
_VIA = re.compile(r"(?<![不沒未算部就次樣上有已均])通過(?![。，：了；！、）」”\"'\n]|$)")
_LIBRARY = re.compile(r"(?<![存料倉式])庫")   # a software library: 函式庫
# a software package (包 alone), not 包含, 包括, 包裝 or 包起來: Taiwan writes 套件
_PACKAGE = re.compile(r"(?<![打區])(?<!軟體)包(?![含括裝起打圍])")
_LATIN_THEN_HAN = re.compile(r"(kernel)(?=[\u4e00-\u9fff])")
_HAN_THEN_LATIN = re.compile(r"(?<=[\u4e00-\u9fff])(kernel)")
# a bit count: Taiwan writes 位元 (16 位元索引), the mainland 位 (16 位索引)
_BITS = re.compile(r"(?<![前\d])(?<!前 )(\d+)(\s?)位(?![元數置址於次])")   # not 前 12 位, digits
_QUOTES = str.maketrans({"“": "「", "”": "」", "‘": "『", "’": "』"})


def _marks(start: int, words) -> dict[str, str]:
    return {w: chr(start + i) for i, w in enumerate(words)}   # Unicode private use


_LINE_MARK = chr(0xE0FE)
_COLUMN_MARK, _ROW_MARK = chr(0xE0FC), chr(0xE0FD)


def swap_columns_and_rows(text: str) -> str:
    """zh-CN ``text`` with each column's 列 and each row's 行 replaced by marks that
    :func:`converter` turns into Taiwan's 欄 and 列 (a line's 行 is left alone)."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str of Simplified Chinese, got {type(text).__name__}")
    for phrase in LINE_SENSE:
        text = text.replace(phrase, phrase.replace("行", _LINE_MARK))
    text = _COLUMN.sub(_COLUMN_MARK, text)
    text = _ROW.sub(_ROW_MARK, text)
    return text.replace(_LINE_MARK, "行")


def converter():
    """A function: zh-CN text -> zh-TW text, in the three steps the module describes."""
    try:
        import opencc
    except ImportError:
        sys.exit("the zh-TW edition needs OpenCC: pip install opencc==1.4.2 "
                 "(it is in requirements.txt; make translations installs it)")
    s2twp = opencc.OpenCC("s2twp").convert
    terms = sorted(SOURCE_TERMS, key=len, reverse=True)
    marks = _marks(0xE000, terms)

    def convert(text: str) -> str:
        text = swap_columns_and_rows(text)
        for term in terms:
            text = text.replace(term, marks[term])
        text = s2twp(text)
        for term in terms:
            text = text.replace(marks[term], SOURCE_TERMS[term])
        text = text.replace(_COLUMN_MARK, "欄").replace(_ROW_MARK, "列")
        for mainland, taiwan in TAIWAN:
            text = text.replace(mainland, taiwan)
        text = _PACKAGE.sub("套件", _CHIP.sub("顆", _CARD.sub("張", text)))
        text = _CORE.sub("核心", text)
        text = _VIA.sub("透過", _LIBRARY.sub("函式庫", _LI.sub("裡", text)))
        text = _BITS.sub(r"\1\2位元", text)
        text = _HAN_THEN_LATIN.sub(r" \1", _LATIN_THEN_HAN.sub(r"\1 ", text))
        return text.translate(_QUOTES)
    return convert
