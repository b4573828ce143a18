"""The zh-TW edition reads as Taiwan writes: no mainland-only terms, no inverted columns and
rows, none of OpenCC's segmentation errors, and figures drawn with a Traditional font.

The lists below are kept apart from the phrase table in companion/tools/zh_tw.py on
purpose: they are what a Taiwan reader flagged, and the table is one way to get there.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import pytest

from companion.tools import glossary, zh_tw

ROOT = Path(__file__).resolve().parents[1]
TW = ROOT / "notebooks" / "zh-TW"

# Mainland-only words, and the Taiwan word a reader expects instead.
MAINLAND = {
    "並行": "平行 (資料平行, 管線平行: the MIT notes in Traditional Chinese)",
    "集合通訊": "集體通訊 (the MIT notes in Traditional Chinese)", "編寫": "撰寫",
    "十進位制": "十進位", "二進位制": "二進位", "留出集": "保留集 (a held-out set)",
    "流水線": "管線", "運算元": "運算子 (運算元 is an operand)", "全域性": "全域",
    "區域性": "局部", "網絡": "網路", "幻燈片": "投影片", "軟體包": "套件",
    "單元格": "儲存格", "幫助資訊": "說明訊息", "字面量": "字面值", "視訊記憶體": "記憶體", "丟擲": "拋出", "塊 GPU": "張 GPU",
    "塊 H100": "張 H100", "塊 A100": "張 A100", "塊 B200": "張 B200", "塊網路卡": "張網路卡",
    "“": "「", "”": "」", "打印": "印出 / 列印", "運行": "執行", "實現": "實作",
    "返回": "傳回", "批大小": "批次大小", "反饋": "回饋", "交換機": "交換器",
    "倉庫": "儲存庫", "推理": "推論", "閾值": "門檻", "規約": "歸約 (規約 reads as a statute)",
    "程序組": "行程群組", "控制元件": "控制項", "小部件": "控制項", "示例": "範例",
    "例項": "實例", "回撥": "回呼", "平臺": "平台", "計算機": "電腦", "互聯": "互連",
    "掛起": "卡住", "計費": "計入", "報錯": "出錯", "拖動": "拖曳", "滑塊": "滑桿",
    "默認": "預設", "質量": "品質", "簡體中文版": "繁體中文版", "通訊庫": "通訊函式庫",
    "本包": "本套件", "包中的": "套件中的", "擴充套件": "擴展 (s2twp's 扩展)",
    "筆記本電腦": "筆記型電腦", "這檯": "這臺", "印出出": "印出",
    "訪問": "存取 (memory access)", "構建": "建構 / 建立", "顯式": "明確", "下拉框": "下拉式選單",
    "寫盤": "寫入磁碟", "時間視窗": "時間區間 (視窗 is a GUI window)", "泊松": "卜瓦松",
    "噪聲": "雜訊", "最小二乘": "最小平方", "方差": "變異數", "溢位容量": "超出容量",
    "溢位的部分": "溢出的部分 (溢位 is a number's overflow)", "驅動自己的一塊": "驅動自己的一張",
    "每個成員一塊": "每個成員一張", "一萬六千塊": "一萬六千張", "塊都跑滿": "張都跑滿",
    "均已透過": "均已通過 (the checks passed)",
    "掩碼": "遮罩 (a mask)", "歸一化": "正規化", "超時": "逾時 (a timeout)", "搭建": "建構",
    "搭出": "組出", "流式多處理器": "串流多處理器 (NVIDIA's SM)", "復現": "重現",
    "隨機數": "亂數", "退出碼": "結束代碼", "自定義": "自訂", "棧幀": "堆疊框架", "標量": "純量",
    "識別符號": "識別字 (an identifier)", "源文字": "原始文字", "會話": "工作階段 (a session)",
    "在終端中": "在終端機中", "OFL 許可": "OFL 授權 (a licence)", "註釋": "註解 (a code comment)",
    "複用": "重複使用", "遞推": "遞迴 (a recurrence)", "下標": "索引", "萬億": "兆", "算例": "計算範例",
    "套接字": "通訊端 (a socket)", "兆位元": "百萬位元 (a megabit: 兆 is 10^12 in Taiwan)",
    "拼接": "串接", "計劃": "計畫", "兩條命令": "兩個指令", "子命令": "子指令", "配置好": "設定好",
    "錯誤資訊": "錯誤訊息", "例外資訊": "例外訊息", "預檢資訊": "預檢訊息", "賬": "帳 (記帳: the notes)",
    "批正規化": "批次正規化", "運運算子": "運算子", "錯誤簡報": "錯誤示範 (簡報 is a slide deck)",
    "下面簡報": "下面示範", "替換後的單元": "替換後的儲存格", "下一塊上": "下一張上 (a GPU)",
    "只驅動一塊": "只驅動一張", "只有一塊。": "只有一張 (a NIC)", "一塊以其": "一張以其 (an A100)",
    "rank 一塊": "rank 一張 (a GPU)", "GPU 一塊": "GPU 一張 (a NIC)", "GPU，每塊": "GPU，每張",
}
# OpenCC's segmentation errors: characters that are wrong wherever they stand here.
WRONG_CHARACTERS = {"隻": "只", "髮": "發", "上覆制": "上複製", "覆現": "重現",
                    "個數據": "個資料", "數據": "資料", "複制": "複製", "鍾": "鐘 (牆鐘時間)",
                    "舍入": "捨入", "活可干": "活可幹", "併為": "並為", "併發送": "並發送",
                    "併發": "同時 / 並行", "併行": "平行", "論文字身": "論文本身", "錶": "表 (表格)",
                    "寫明瞭": "寫明了", "箇中文": "個中文", "嚐": "嘗 (嘗試)", "線上路上": "在線路上 (在線路上傳輸)",
                    "註意": "注意", "采用": "採用", "陣列成": "數組成 (整數組成, 計數組成)",
                    "前欄": "前列 (排在前列)", "帶重新整理": "帶排空 (a pipeline flush)",
                    "位數值": "位元數值 (32 位元數值)"}
WRONG_PATTERNS = {r"(?<![公英海千阿])里(?!程)": "裡 (里 is a unit of distance; 阿里巴巴 a name)",
                  r"(?<![前\d])(?<!前 )\d+\s?位(?![元數置址於次])": "位元 (16 位元索引: a bit count)",
                  r"(?<!這一)(?<!那一)(?<=[一每\d])\s?塊[^。，；：（）()、\n塊]{0,24}?(?:GPU|[HABV]100|網路卡)":
                  "張 (a GPU or a NIC is counted with 張)",
                  r"[\u4e00-\u9fff]kernel|kernel[\u4e00-\u9fff]": "a space between kernel and hanzi",
                  r"CPU 核(?!心)|幾個核(?!心)|[臺台器的]核數|\d 核機器": "核心 (a CPU core)"}
# Column and row: Taiwan writes 欄 for a column and 列 for a row; these are the mainland
# order, which a Taiwan reader reads inverted.
INVERTED = ("(?<!平)行平行", "按行", "行切分", "輸入行", "行和列", "(?<!平)行組", "換列")
# One word, one sense: a GPU kernel is not a CPU core (both 核心 after s2twp).
KERNEL_AS_CORE = ("GPU 核心", "CUDA 核心", "融合核心", "核心啟動", "核心效率", "核心函式庫",
                  "高吞吐核心", "低延遲核心", "核心只發送", "搬運它們的核心", "core）核心",
                  "不確定性的核心")
# A line of output stays 行 (Taiwan writes 行 for a line too).
LINE_AS_ROW = ("進度列",)


def _notebook_texts():
    for path in sorted(TW.glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "markdown":
                yield f"{path.name}:{cell.id}", cell.source


def _package_texts():
    data = ROOT / "companion" / "i18n" / "data"
    tables = json.loads((data / "messages.zh-TW.json").read_text(encoding="utf-8"))
    for name, table in tables.items():
        if isinstance(table, dict):
            for key, value in table.items():
                yield f"messages.zh-TW.json:{name}:{key[:40]}", value
    exercises = json.loads((data / "exercises.json").read_text(encoding="utf-8"))
    for ex_id, entry in exercises.get("zh-TW", {}).items():
        yield f"exercises.json:{ex_id}", "\n".join(
            [entry.get("title", ""), entry.get("task", ""), *entry.get("hints", [])])


def _document_texts():
    yield "README.zh-TW.md", (ROOT / "README.zh-TW.md").read_text(encoding="utf-8")
    for row in glossary.terms((ROOT / "docs" / "glossary.md").read_text(encoding="utf-8")):
        yield f"glossary:{row['Term']}", row["zh-TW"]


def _all_texts():
    return [*_notebook_texts(), *_package_texts(), *_document_texts()]


def _hits(needles, texts, regex=False):
    found = []
    for where, text in texts:
        for needle in needles:
            match = re.search(needle, text) if regex else (needle in text and needle)
            if match:
                at = text.index(match.group(0) if regex else needle)
                found.append(f"{where}: {text[max(0, at - 12):at + 12]!r}")
    return found


def test_zh_tw_has_no_mainland_terms():
    found = _hits(MAINLAND, _all_texts())
    assert not found, ("mainland terms in zh-TW (see MAINLAND for the Taiwan word):\n"
                       + "\n".join(found[:40]))


def test_zh_tw_has_none_of_opencc_segmentation_errors():
    texts = _all_texts()
    found = _hits(WRONG_CHARACTERS, texts) + _hits(WRONG_PATTERNS, texts, regex=True)
    assert not found, "\n".join(found[:40])


def test_zh_tw_never_inverts_columns_and_rows():
    texts = _all_texts()
    assert not _hits(INVERTED, texts, regex=True), _hits(INVERTED, texts, regex=True)[:20]
    nb05 = dict(_notebook_texts())
    assert "fc1 欄平行，fc2 列平行" in "".join(
        t for k, t in nb05.items() if k.startswith("05_"))
    rows = {r["Term"]: r["zh-TW"] for r in glossary.terms(
        (ROOT / "docs" / "glossary.md").read_text(encoding="utf-8"))}
    split = next(v for k, v in rows.items() if "column" in k.lower())
    assert "欄平行" in split and "列平行" in split and split.index("欄") < split.index("列")


def test_a_gpu_kernel_is_not_written_as_a_cpu_core():
    assert not _hits(KERNEL_AS_CORE, _all_texts())


def test_a_line_of_output_is_not_written_as_a_row():
    assert not _hits(LINE_AS_ROW, _all_texts())


@pytest.mark.parametrize("simplified, traditional", [
    ("fc1 列并行，fc2 行并行", "fc1 欄平行，fc2 列平行"),   # column, row
    ("按列切分；按行切分", "按欄切分；按列切分"),
    ("表格的最后一行和第一列", "表格的最後一列和第一欄"),
    ("输出的第一行以 `[launch]` 开头", "輸出的第一行以 `[launch]` 開頭"),   # a line stays 行
    ("序列并行把序列切开，列表", "序列平行把序列切開，串列"),
    ("执行、运行与进程", "執行、執行與行程"),
    ("仿真时间与模拟器", "仿真時間與模擬器"),      # emulated and simulated stay apart
    ("GPU 内核和 2 个 CPU 核心", "GPU kernel 和 2 個 CPU 核心"),
    ("“引号”里只有一块 GPU", "「引號」裡只有一張 GPU"),
    ("在 4 块以 NVLink 相连的 GPU 上；每块 400 Gb/s 的网卡", "在 4 張以 NVLink 相連的 GPU 上；每張 400 Gb/s 的網路卡"),
    ("对这一块做全规约（每个 rank 经由自己的网卡", "對這一塊做全歸約（每個 rank 經由自己的網路卡"),
    ("所有自检均已通过（1 s）", "所有自檢均已通過（1 s）"),
    ("每块 GPU 都通过 NVLink 连接", "每張 GPU 都透過 NVLink 連線"),
    ("16 位索引，1 位元组", "16 位元索引，1 位元組"),
    ("墙钟时间与舍入误差", "牆鐘時間與捨入誤差"),
    ("DeepEP 的高吞吐内核，一次内核启动", "DeepEP 的高吞吐 kernel，一次 kernel 啟動"),
    ("中断内核（■ 按钮）", "中斷核心（■ 按鈕）"),          # a Jupyter kernel stays 核心
    ("传入 0 表示不打印进度行", "傳入 0 表示不列印進度行"),
    ("结果被复制", "結果被複製"),
    ("SHA-256 的前 12 位；32 位索引", "SHA-256 的前 12 位；32 位元索引"),   # 12 hex digits, not bits
    ("接收 N-1 个张量并发送；DeepSeek 并发执行", "接收 N-1 個張量並發送；DeepSeek 同時執行"),
    ("停止内核，在内核里", "停止核心，在核心裡"),
    ("这些形状取自论文本身；看表格之前", "這些形狀取自論文本身；看表格之前"),
    ("卡片上写明了数目；先尝试了它", "卡片上寫明了數目；先嘗試了它"),
    ("ZeRO-3 在线路上传输的位元组数", "ZeRO-3 在線路上傳輸的位元組數"),
    ("另加注意力；论文没有采用的配置", "另加注意力；論文沒有採用的配置"),
    ("由 >= 1 的整数组成；不能含引号或换行", "由 >= 1 的整數組成；不能含引號或換行"),
    ("排在搜索结果的前列；不是阿里巴巴的训练", "排在搜尋結果的前列；不是阿里巴巴的訓練"),
    ("因果掩码与超时；归一化因子", "因果遮罩與逾時；正規化因子"),
    ("第 41-80 层放在下一块上；每块 GPU 一块 {bw} GB/s 的网卡", "第 41-80 層放在下一張上；每張 GPU 一張 {bw} GB/s 的網路卡"),
    ("f/g 错误演示；下面演示的是 Rabenseifner", "f/g 錯誤示範；下面示範的是 Rabenseifner"),
    ("**算例**：带刷新的 1F1B，一个 32 位数值", "**計算範例**：帶排空的 1F1B，一個 32 位元數值"),
])
def test_the_converter_on_sentences_a_reader_checked(simplified, traditional):
    assert zh_tw.converter()(simplified) == traditional


def test_the_traditional_readme_names_itself_and_links_to_the_simplified_one():
    text = (ROOT / "README.zh-TW.md").read_text(encoding="utf-8")
    head = "\n".join(text.splitlines()[:4])
    assert "繁體中文版" in head and "(README.zh-CN.md)" in head
    assert "(README.zh-TW.md)" not in head, "the page links to itself"
    simplified = (ROOT / "README.zh-CN.md").read_text(encoding="utf-8")
    assert "(README.zh-TW.md)" in "\n".join(simplified.splitlines()[:4])


def test_zh_tw_figures_use_the_traditional_font():
    import matplotlib as mpl
    from fontTools.ttLib import TTFont

    import companion.plotting as plotting
    font = plotting.CJK_FONTS["zh-TW"]
    assert TTFont(font)["name"].getDebugName(1) == "Noto Sans CJK TC"
    tables = json.loads((ROOT / "companion" / "i18n" / "data" / "messages.zh-TW.json")
                        .read_text(encoding="utf-8"))
    text = "".join(v for t in tables.values() if isinstance(t, dict) for v in t.values())
    cmap = TTFont(font).getBestCmap()
    missing = sorted({c for c in text if ord(c) > 0x2E7F and ord(c) not in cmap})
    assert not missing, f"re-run python -m companion.tools.fontsubset: {missing}"
    saved = {k: list(mpl.rcParams[k]) for k in ("font.sans-serif", "font.family")}
    try:
        assert plotting.use_cjk_font("zh-TW") == "Noto Sans CJK TC"
        assert "Noto Sans CJK SC" not in mpl.rcParams["font.sans-serif"]
        assert plotting.use_cjk_font("zh-CN") == "Noto Sans CJK SC"
        assert "Noto Sans CJK TC" not in mpl.rcParams["font.sans-serif"]
    finally:
        for key, value in saved.items():
            mpl.rcParams[key] = value
