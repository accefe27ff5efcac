<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="zh_CN" sourcelanguage="en">
<context>
    <name>folio::ChatMessageView</name>
    <message>
        <source>You</source>
        <translation>你</translation>
    </message>
    <message>
        <source>Folio</source>
        <translation>Folio</translation>
    </message>
    <message>
        <source>Copy</source>
        <translation>复制</translation>
    </message>
    <message>
        <source>Copy the answer</source>
        <translation>复制回答</translation>
    </message>
    <message>
        <source>Writing…</source>
        <translation>正在生成…</translation>
    </message>
    <message>
        <source>Stopped</source>
        <translation>已停止</translation>
    </message>
</context>
<context>
    <name>folio::ChatPanel</name>
    <message>
        <source>Image %1</source>
        <translation>图片 %1</translation>
    </message>
    <message>
        <source>No page is shown to attach.</source>
        <translation>当前没有可附加的页面。</translation>
    </message>
    <message>
        <source>Page</source>
        <translation>页面</translation>
    </message>
    <message>
        <source>No page is shown to select a region of.</source>
        <translation>当前没有可框选区域的页面。</translation>
    </message>
    <message>
        <source>Region</source>
        <translation>区域</translation>
    </message>
    <message>
        <source>Attach images</source>
        <translation>附加图片</translation>
    </message>
    <message>
        <source>Images (*.png *.jpg *.jpeg *.tif *.tiff *.webp *.bmp);;All files (*)</source>
        <translation>图片 (*.png *.jpg *.jpeg *.tif *.tiff *.webp *.bmp);;所有文件 (*)</translation>
    </message>
    <message>
        <source>%1: %2</source>
        <translation>%1：%2</translation>
    </message>
    <message>
        <source>Cannot attach %1</source>
        <translation>无法附加 %1</translation>
    </message>
    <message>
        <source>Answer copied.</source>
        <translation>回答已复制。</translation>
    </message>
    <message>
        <source>Remove %1 (%2 × %3)</source>
        <translation>移除 %1（%2 × %3）</translation>
    </message>
    <message>
        <source>Chat</source>
        <translation>对话</translation>
    </message>
    <message>
        <source>New conversation</source>
        <translation>新对话</translation>
    </message>
    <message>
        <source>Forget this document&apos;s conversation</source>
        <translation>清除此文档的对话记录</translation>
    </message>
    <message>
        <source>Ask about the current page, a region of it, or any image.
Attach one, type a question and press Enter.</source>
        <translation>可以就当前页面、页面中的区域或任意图片提问。
附加图片，输入问题后按 Enter 发送。</translation>
    </message>
    <message>
        <source>Ask a question…</source>
        <translation>输入问题…</translation>
    </message>
    <message>
        <source>Attach</source>
        <translation>附加</translation>
    </message>
    <message>
        <source>Current page</source>
        <translation>当前页面</translation>
    </message>
    <message>
        <source>Region of the page…</source>
        <translation>页面区域…</translation>
    </message>
    <message>
        <source>Image files…</source>
        <translation>图片文件…</translation>
    </message>
    <message>
        <source>Send</source>
        <translation>发送</translation>
    </message>
    <message>
        <source>Stop</source>
        <translation>停止</translation>
    </message>
    <message>
        <source>Stop the answer; what it wrote so far stays</source>
        <translation>停止生成回答；已生成的内容会保留</translation>
    </message>
</context>
<context>
    <name>folio::ChatSession</name>
    <message>
        <source>An answer is still being written: stop it first.</source>
        <translation>仍在生成回答，请先停止。</translation>
    </message>
    <message>
        <source>The model is not loaded yet.</source>
        <translation>模型尚未加载。</translation>
    </message>
    <message>
        <source>The engine stopped before the answer was complete.</source>
        <translation>回答完成之前引擎已停止。</translation>
    </message>
    <message>
        <source>The request failed.</source>
        <translation>请求失败。</translation>
    </message>
</context>
<context>
    <name>folio::ComputeDevices</name>
    <message>
        <source>CPU (%1 threads)</source>
        <translation>CPU（%1 线程）</translation>
    </message>
</context>
<context>
    <name>folio::ModelInventory</name>
    <message>
        <source>Hugging Face cache</source>
        <translation>Hugging Face 缓存</translation>
    </message>
    <message>
        <source>Folio&apos;s models folder</source>
        <translation>Folio 模型文件夹</translation>
    </message>
    <message>
        <source>folder</source>
        <translation>文件夹</translation>
    </message>
    <message>
        <source>%1: no such folder</source>
        <translation>%1：文件夹不存在</translation>
    </message>
</context>
<context>
    <name>folio::ModelManagerDialog</name>
    <message>
        <source>layout</source>
        <translation>版面</translation>
    </message>
    <message>
        <source>recognition</source>
        <translation>识别</translation>
    </message>
    <message>
        <source>ready</source>
        <translation>可用</translation>
    </message>
    <message>
        <source>broken: %1</source>
        <translation>已损坏：%1</translation>
    </message>
    <message>
        <source>%1 with %2</source>
        <translation>%1 及 %2</translation>
    </message>
    <message>
        <source>installed</source>
        <translation>已安装</translation>
    </message>
    <message>
        <source>not installed</source>
        <translation>未安装</translation>
    </message>
    <message>
        <source>No model is installed yet: download one below, or choose a folder that holds one.</source>
        <translation>尚未安装模型：请在下方下载，或选择包含模型的文件夹。</translation>
    </message>
    <message>
        <source>%1
%2</source>
        <translation>%1
%2</translation>
    </message>
    <message>
        <source>This model cannot be used:
%1</source>
        <translation>此模型无法使用：
%1</translation>
    </message>
    <message>
        <source>Connecting to %1…</source>
        <translation>正在连接 %1…</translation>
    </message>
    <message>
        <source>Cancelling…</source>
        <translation>正在取消…</translation>
    </message>
    <message>
        <source>%1: %2 of %3, file %4 of %5</source>
        <translation>%1：%2 / %3，第 %4 个文件，共 %5 个</translation>
    </message>
    <message>
        <source>, %1/s</source>
        <translation>，%1/秒</translation>
    </message>
    <message>
        <source>, %1 s left</source>
        <translation>，剩余 %1 秒</translation>
    </message>
    <message>
        <source>%1: looking up the files…</source>
        <translation>%1：正在查找文件…</translation>
    </message>
    <message>
        <source>%1: checking the files…</source>
        <translation>%1：正在校验文件…</translation>
    </message>
    <message>
        <source>%1: done</source>
        <translation>%1：完成</translation>
    </message>
    <message>
        <source>%1 is downloaded and ready.</source>
        <translation>%1 已下载，可以使用。</translation>
    </message>
    <message>
        <source>Download cancelled. What arrived is kept; downloading again resumes it.</source>
        <translation>下载已取消。已下载的部分会保留，再次下载时将继续。</translation>
    </message>
    <message>
        <source>Download failed: %1</source>
        <translation>下载失败：%1</translation>
    </message>
    <message>
        <source>Choose a model folder</source>
        <translation>选择模型文件夹</translation>
    </message>
    <message>
        <source>%1 cannot be used: %2</source>
        <translation>%1 无法使用：%2</translation>
    </message>
    <message>
        <source>%1 holds a layout model; choose a PaddleOCR-VL folder.</source>
        <translation>%1 是版面模型；请选择 PaddleOCR-VL 模型文件夹。</translation>
    </message>
    <message>
        <source>Models</source>
        <translation>模型</translation>
    </message>
    <message>
        <source>Installed models</source>
        <translation>已安装的模型</translation>
    </message>
    <message>
        <source>Model</source>
        <translation>模型</translation>
    </message>
    <message>
        <source>Kind</source>
        <translation>类型</translation>
    </message>
    <message>
        <source>Size</source>
        <translation>大小</translation>
    </message>
    <message>
        <source>Where</source>
        <translation>位置</translation>
    </message>
    <message>
        <source>State</source>
        <translation>状态</translation>
    </message>
    <message>
        <source>Download from the Hugging Face Hub</source>
        <translation>从 Hugging Face Hub 下载</translation>
    </message>
    <message>
        <source>Repository</source>
        <translation>仓库</translation>
    </message>
    <message>
        <source>Download</source>
        <translation>下载</translation>
    </message>
    <message>
        <source>Cancel download</source>
        <translation>取消下载</translation>
    </message>
    <message>
        <source>Choose folder…</source>
        <translation>选择文件夹…</translation>
    </message>
    <message>
        <source>Use this model</source>
        <translation>使用此模型</translation>
    </message>
    <message>
        <source>Close</source>
        <translation>关闭</translation>
    </message>
</context>
<context>
    <name>folio::RegionPicker</name>
    <message>
        <source>Select a region</source>
        <translation>框选区域</translation>
    </message>
    <message>
        <source>Drag a rectangle over the part of the page to ask about.</source>
        <translation>在页面上拖出一个矩形，框住要提问的部分。</translation>
    </message>
    <message>
        <source>Attach</source>
        <translation>附加</translation>
    </message>
</context>
<context>
    <name>folio::Settings</name>
    <message>
        <source>Model: &quot;%1&quot; is neither a folder nor a Hub repository (ORG/NAME)</source>
        <translation>模型：“%1”既不是文件夹，也不是 Hub 仓库（ORG/NAME）</translation>
    </message>
    <message>
        <source>Layout model: &quot;%1&quot; is neither a folder nor a Hub repository (ORG/NAME)</source>
        <translation>版面模型：“%1”既不是文件夹，也不是 Hub 仓库（ORG/NAME）</translation>
    </message>
    <message>
        <source>Device: expected cpu or cuda:N, got &quot;%1&quot;</source>
        <translation>设备：应为 cpu 或 cuda:N，实际为“%1”</translation>
    </message>
    <message>
        <source>Rendering DPI must be between %1 and %2, got %3</source>
        <translation>渲染 DPI 必须在 %1 到 %2 之间，实际为 %3</translation>
    </message>
    <message>
        <source>Layout threshold: unknown label &quot;%1&quot;</source>
        <translation>版面阈值：未知标签“%1”</translation>
    </message>
    <message>
        <source>Layout threshold of %1 must be between 0 and 1, got %2</source>
        <translation>%1 的版面阈值必须在 0 到 1 之间，实际为 %2</translation>
    </message>
    <message>
        <source>Markdown labels: unknown label &quot;%1&quot;</source>
        <translation>Markdown 标签：未知标签“%1”</translation>
    </message>
    <message>
        <source>Export: choose at least one format</source>
        <translation>导出：请至少选择一种格式</translation>
    </message>
    <message>
        <source>Export: unknown format &quot;%1&quot; (expected md, json, html, pdf or xlsx)</source>
        <translation>导出：未知格式“%1”（可选 md、json、html、pdf 或 xlsx）</translation>
    </message>
    <message>
        <source>Language: expected en or zh_CN, got &quot;%1&quot;</source>
        <translation>语言：应为 en 或 zh_CN，实际为“%1”</translation>
    </message>
</context>
<context>
    <name>folio::SettingsDialog</name>
    <message>
        <source>Choose a model folder</source>
        <translation>选择模型文件夹</translation>
    </message>
    <message>
        <source>%1 (not found)</source>
        <translation>%1（未找到）</translation>
    </message>
    <message>
        <source>Layout threshold of %1 must be a number between 0 and 1</source>
        <translation>%1 的版面阈值必须是 0 到 1 之间的数字</translation>
    </message>
    <message>
        <source>Applying reloads the model: documents being read are stopped and restarted.</source>
        <translation>应用后将重新加载模型：正在识别的文档会停止并重新开始。</translation>
    </message>
    <message>
        <source>Applying restarts the engine with the new options; the model stays loaded.</source>
        <translation>应用后引擎将以新参数重启；模型保持加载。</translation>
    </message>
    <message>
        <source>Settings</source>
        <translation>设置</translation>
    </message>
    <message>
        <source>General</source>
        <translation>常规</translation>
    </message>
    <message>
        <source>Model</source>
        <translation>模型</translation>
    </message>
    <message>
        <source>Engine</source>
        <translation>引擎</translation>
    </message>
    <message>
        <source>Documents</source>
        <translation>文档</translation>
    </message>
    <message>
        <source>Export</source>
        <translation>导出</translation>
    </message>
    <message>
        <source>OK</source>
        <translation>确定</translation>
    </message>
    <message>
        <source>Apply</source>
        <translation>应用</translation>
    </message>
    <message>
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
    <message>
        <source>Restore defaults</source>
        <translation>恢复默认值</translation>
    </message>
    <message>
        <source>Language</source>
        <translation>语言</translation>
    </message>
    <message>
        <source>System default</source>
        <translation>跟随系统</translation>
    </message>
    <message>
        <source>a folder, or ORG/NAME on disk</source>
        <translation>文件夹，或本机已有的 ORG/NAME</translation>
    </message>
    <message>
        <source>Layout model</source>
        <translation>版面模型</translation>
    </message>
    <message>
        <source>empty: the model&apos;s pair</source>
        <translation>留空：使用与模型配套的版面模型</translation>
    </message>
    <message>
        <source>Device</source>
        <translation>设备</translation>
    </message>
    <message>
        <source>Quantization</source>
        <translation>量化</translation>
    </message>
    <message>
        <source>The first PaddleOCR-VL model installed</source>
        <translation>第一个已安装的 PaddleOCR-VL 模型</translation>
    </message>
    <message>
        <source>The layout model released with the model</source>
        <translation>与模型一同发布的版面模型</translation>
    </message>
    <message>
        <source>Browse…</source>
        <translation>浏览…</translation>
    </message>
    <message>
        <source>Manage models…</source>
        <translation>管理模型…</translation>
    </message>
    <message>
        <source>None (bfloat16 weights)</source>
        <translation>不量化（bfloat16 权重）</translation>
    </message>
    <message>
        <source>WINT8 (8-bit weights, about half the memory)</source>
        <translation>WINT8（8 位权重，显存约减半）</translation>
    </message>
    <message>
        <source>WINT4 (4-bit weights, for 4 GB cards)</source>
        <translation>WINT4（4 位权重，适用于 4 GB 显卡）</translation>
    </message>
    <message>
        <source>the model&apos;s context</source>
        <translation>模型上下文长度</translation>
    </message>
    <message>
        <source>GPU memory utilization</source>
        <translation>GPU 显存占用比例</translation>
    </message>
    <message>
        <source>Context length</source>
        <translation>上下文长度</translation>
    </message>
    <message>
        <source>Concurrent sequences</source>
        <translation>并发序列数</translation>
    </message>
    <message>
        <source>Tokens per step</source>
        <translation>每步 token 数</translation>
    </message>
    <message>
        <source>Prefix caching</source>
        <translation>前缀缓存</translation>
    </message>
    <message>
        <source>Share cached prompt prefixes between requests</source>
        <translation>在请求之间共享已缓存的提示词前缀</translation>
    </message>
    <message>
        <source>PDF rendering DPI</source>
        <translation>PDF 渲染 DPI</translation>
    </message>
    <message>
        <source>Checked labels reach the Markdown and HTML. A threshold overrides the layout model&apos;s score threshold for that label (0 to 1; empty: PaddleX&apos;s).</source>
        <translation>勾选的标签会输出到 Markdown 和 HTML。阈值用于覆盖该标签的版面检测置信度阈值（0 到 1；留空则使用 PaddleX 的默认值）。</translation>
    </message>
    <message>
        <source>Layout label</source>
        <translation>版面标签</translation>
    </message>
    <message>
        <source>Threshold</source>
        <translation>阈值</translation>
    </message>
    <message>
        <source>Markdown (.md, with figures)</source>
        <translation>Markdown（.md，含图片）</translation>
    </message>
    <message>
        <source>JSON (blocks, boxes, labels, order)</source>
        <translation>JSON（区块、边框、标签、顺序）</translation>
    </message>
    <message>
        <source>HTML</source>
        <translation>HTML</translation>
    </message>
    <message>
        <source>Searchable PDF</source>
        <translation>可搜索 PDF</translation>
    </message>
    <message>
        <source>Excel workbook of the tables (.xlsx)</source>
        <translation>表格的 Excel 工作簿（.xlsx）</translation>
    </message>
    <message>
        <source>These are FastDeploy&apos;s serving options, with its names and ranges. The KV cache takes what GPU memory utilization leaves after the weights.</source>
        <translation>这些是 FastDeploy 的服务参数，名称与取值范围与其一致。KV 缓存使用显存占用比例中扣除权重后剩余的部分。</translation>
    </message>
</context>
</TS>
