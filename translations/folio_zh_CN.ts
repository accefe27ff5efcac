<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="zh_CN" sourcelanguage="en">
<context>
    <name>QObject</name>
    <message>
        <source>Chat</source>
        <translation>对话</translation>
    </message>
    <message>
        <source>Markdown (with an images folder)</source>
        <translation>Markdown（含图片文件夹）</translation>
    </message>
    <message>
        <source>JSON (blocks, boxes, labels, order)</source>
        <translation>JSON（块、框、标签、顺序）</translation>
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
        <source>XLSX (tables)</source>
        <translation>XLSX（表格）</translation>
    </message>
    <message>
        <source>Word document (.docx)</source>
        <translation>Word 文档（.docx）</translation>
    </message>
    <message>
        <source>Chat: %1</source>
        <translation>对话：%1</translation>
    </message>
    <message>
        <source>The conversations were not saved: %1</source>
        <translation>对话未能保存：%1</translation>
    </message>
</context>
<context>
    <name>folio::BlockItem</name>
    <message>
        <source>&lt;b&gt;%1&lt;/b&gt; &amp;nbsp;score %2</source>
        <translation>&lt;b&gt;%1&lt;/b&gt; &amp;nbsp;置信度 %2</translation>
    </message>
    <message>
        <source>&lt;br&gt;reading order %1</source>
        <translation>&lt;br&gt;阅读顺序 %1</translation>
    </message>
    <message>
        <source>&lt;br&gt;task %1</source>
        <translation>&lt;br&gt;任务 %1</translation>
    </message>
</context>
<context>
    <name>folio::ChatMessageView</name>
    <message>
        <source>Answered from part of the document: pages %1 did not fit in the context.</source>
        <translation>仅依据文档的一部分作答：第 %1 页未能放入上下文。</translation>
    </message>
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
    <message>
        <source>Thinking… (1 token)</source>
        <translation>思考中…（1 个 token）</translation>
    </message>
    <message>
        <source>Thinking… (%1 tokens)</source>
        <translation>思考中…（%1 个 token）</translation>
    </message>
    <message>
        <source>Thought for 1 token</source>
        <translation>思考了 1 个 token</translation>
    </message>
    <message>
        <source>Thought for %1 tokens</source>
        <translation>思考了 %1 个 token</translation>
    </message>
    <message>
        <source>Hide the reasoning</source>
        <translation>隐藏推理过程</translation>
    </message>
    <message>
        <source>Show the reasoning</source>
        <translation>显示推理过程</translation>
    </message>
    <message>
        <source>The answer ran out of tokens while still reasoning.</source>
        <translation>回答在推理阶段就用完了 token。</translation>
    </message>
    <message>
        <source>Video: %1 frames</source>
        <translation>视频：%1 帧</translation>
    </message>
    <message>
        <source>video
not kept</source>
        <translation>视频
未保留</translation>
    </message>
    <message>
        <source>Videos are not kept when Folio closes: attach it again to ask about it</source>
        <translation>Folio 关闭时不保留视频：如需就它提问，请重新附加</translation>
    </message>
    <message>
        <source>Answered from part of the document: of pages %1 only the blocks nearest the question fitted in the context.</source>
        <translation>仅依据文档的一部分作答：第 %1 页只有与问题最相关的块放入了上下文。</translation>
    </message>
    <message>
        <source>Answered from part of the document: pages %1 did not fit in the context, and of pages %2 only the blocks nearest the question did.</source>
        <translation>仅依据文档的一部分作答：第 %1 页未能放入上下文，第 %2 页只放入了与问题最相关的块。</translation>
    </message>
</context>
<context>
    <name>folio::ChatPanel</name>
    <message>
        <source>This document has no recognised text to ask about yet: run it first.</source>
        <translation>此文档还没有可供提问的识别文本：请先运行识别。</translation>
    </message>
    <message>
        <source>Asking the document needs a chat model: download one with the button above.</source>
        <translation>询问文档需要对话模型：请用上方的按钮下载一个。</translation>
    </message>
    <message>
        <source>The document has no block %1.</source>
        <translation>文档中没有区块 %1。</translation>
    </message>
    <message>
        <source>Ask the document</source>
        <translation>询问文档</translation>
    </message>
    <message>
        <source>Answer from the document&apos;s recognised text, citing the blocks each answer comes from; a click on a citation shows its block</source>
        <translation>依据文档的识别文本作答，并引用每个回答所依据的区块；点击引用即可显示该区块</translation>
    </message>
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
    <message>
        <source>Chat · %1</source>
        <translation>对话 · %1</translation>
    </message>
    <message>
        <source>No chat model is loaded: the OCR model answers, which reads text well but is not made for conversation. A chat model (ERNIE-4.5-VL) loads beside it where memory allows.</source>
        <translation>未加载对话模型：由 OCR 模型回答，它擅长识别文字，但并非为对话而设计。内存允许时，对话模型（ERNIE-4.5-VL）会与它一同加载。</translation>
    </message>
    <message>
        <source>Download a chat model…</source>
        <translation>下载对话模型…</translation>
    </message>
    <message>
        <source>Dropped image</source>
        <translation>拖入的图像</translation>
    </message>
    <message>
        <source>Attach images or videos</source>
        <translation>附加图像或视频</translation>
    </message>
    <message>
        <source>Images and videos (*.png *.jpg *.jpeg *.tif *.tiff *.webp *.bmp *.mp4 *.mov *.mkv *.webm *.avi *.m4v);;All files (*)</source>
        <translation>图像和视频 (*.png *.jpg *.jpeg *.tif *.tiff *.webp *.bmp *.mp4 *.mov *.mkv *.webm *.avi *.m4v);;所有文件 (*)</translation>
    </message>
    <message>
        <source>%1 (%2 frames)</source>
        <translation>%1（%2 帧）</translation>
    </message>
    <message>
        <source>Remove %1</source>
        <translation>移除 %1</translation>
    </message>
    <message>
        <source>Image or video files…</source>
        <translation>图像或视频文件…</translation>
    </message>
    <message>
        <source>Ask about the current page, a region of it, or any image or video.
Attach one, type a question and press Enter.</source>
        <translation>询问当前页面、页面中的某个区域，或任意图像或视频。
附加一项，输入问题后按 Enter。</translation>
    </message>
    <message>
        <source>Reading %1…</source>
        <translation>正在读取 %1…</translation>
    </message>
    <message>
        <source>Attach the page, a region of it, or image and video files</source>
        <translation>附加当前页面、页面中的区域，或图像和视频文件</translation>
    </message>
    <message>
        <source>%1 reads text only and cannot see pages or pictures</source>
        <translation>%1 只能读取文本，无法查看页面或图片</translation>
    </message>
    <message>
        <source>Ask anything, or turn on Ask the document to ask about this document&apos;s recognised text.
%1 reads text only: it cannot see pages or pictures.</source>
        <translation>可以提任何问题，或打开“询问文档”，就此文档识别出的文本提问。
%1 只能读取文本：无法查看页面或图片。</translation>
    </message>
</context>
<context>
    <name>folio::ChatSession</name>
    <message>
        <source>This document has no recognised text to ask about yet: run it first.</source>
        <translation>此文档还没有可供提问的识别文本：请先运行识别。</translation>
    </message>
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
    <message>
        <source>%1 does not take videos: install a chat model (ERNIE-4.5-VL) to ask about one.</source>
        <translation>%1 不接受视频：请安装对话模型（ERNIE-4.5-VL）后再询问视频。</translation>
    </message>
    <message>
        <source>%1 reads text only and cannot see images: install ERNIE-4.5-VL to ask about pages and pictures, or use Ask the document to ask about the recognised text.</source>
        <translation>%1 只能读取文本，无法查看图像：如需询问页面和图片，请安装 ERNIE-4.5-VL；或使用“询问文档”就识别出的文本提问。</translation>
    </message>
    <message>
        <source>Not even one block of the document fits in the model&apos;s context of %1 tokens beside the question and room for the answer: load the model with a longer context (Settings).</source>
        <translation>除去问题和回答所需的空间，模型 %1 个 token 的上下文连文档的一个块也放不下：请以更长的上下文加载模型（设置）。</translation>
    </message>
    <message>
        <source>Not even one block of the document fits in the model&apos;s context of %1 tokens beside this conversation: start a new conversation, or load the model with a longer context (Settings).</source>
        <translation>在本次对话之外，模型 %1 个 token 的上下文连文档的一个块也放不下：请开始新的对话，或以更长的上下文加载模型（设置）。</translation>
    </message>
    <message>
        <source>Not even one block of the document fits in the model&apos;s context of %1 tokens beside the attached images and videos (%2 tokens): ask without them, or load the model with a longer context (Settings).</source>
        <translation>除去附加的图像和视频（%2 个 token），模型 %1 个 token 的上下文连文档的一个块也放不下：请去掉附件再提问，或以更长的上下文加载模型（设置）。</translation>
    </message>
</context>
<context>
    <name>folio::ComputeDevices</name>
    <message>
        <source>CPU (%1 threads)</source>
        <translation>CPU（%1 线程）</translation>
    </message>
    <message>
        <source>All %1 GPUs (the models on each)</source>
        <translation>全部 %1 块 GPU（每块各载一份模型）</translation>
    </message>
</context>
<context>
    <name>folio::DeferredFileWriter</name>
    <message>
        <source>%1 (kept as %2)</source>
        <translation>%1（已另存为 %2）</translation>
    </message>
</context>
<context>
    <name>folio::DocumentExporter</name>
    <message>
        <source>searchable PDF</source>
        <translation>可搜索 PDF</translation>
    </message>
    <message>
        <source>XLSX not written: no table was recognised as a grid</source>
        <translation>未写入 XLSX：没有表格被识别为网格</translation>
    </message>
    <message>
        <source>%1 not written: nothing to write</source>
        <translation>未写入 %1：没有可写入的内容</translation>
    </message>
</context>
<context>
    <name>folio::DocumentModel</name>
    <message>
        <source>Edit block %1</source>
        <translation>编辑块 %1</translation>
    </message>
    <message>
        <source>Delete block %1</source>
        <translation>删除块 %1</translation>
    </message>
</context>
<context>
    <name>folio::DocumentState</name>
    <message>
        <source>opening</source>
        <translation>正在打开</translation>
    </message>
    <message>
        <source>not run</source>
        <translation>未运行</translation>
    </message>
    <message>
        <source>queued</source>
        <translation>排队中</translation>
    </message>
    <message>
        <source>running</source>
        <translation>运行中</translation>
    </message>
    <message>
        <source>done</source>
        <translation>完成</translation>
    </message>
    <message>
        <source>failed</source>
        <translation>失败</translation>
    </message>
    <message>
        <source>cancelled</source>
        <translation>已取消</translation>
    </message>
    <message>
        <source>closed</source>
        <translation>已关闭</translation>
    </message>
</context>
<context>
    <name>folio::EngineHost</name>
    <message>
        <source>The chat model %1 and the OCR model %2 do not fit in the memory of %3 together: %4

%2 runs alone and the chat uses it. To run both, free memory other programs use, lower the context length or the concurrent sequences, quantize the weights (WINT8, WINT4) or choose a smaller chat model.</source>
        <translation>对话模型 %1 与 OCR 模型 %2 无法同时放入 %3 的内存：%4

%2 单独运行，对话也使用它。若要同时运行两者，请释放其他程序占用的内存、降低上下文长度或并发序列数、量化权重（WINT8、WINT4），或选择更小的对话模型。</translation>
    </message>
    <message>
        <source>Starting the engine</source>
        <translation>正在启动引擎</translation>
    </message>
    <message>
        <source>Opening the model files</source>
        <translation>正在打开模型文件</translation>
    </message>
    <message>
        <source>Loading weights</source>
        <translation>正在加载权重</translation>
    </message>
    <message>
        <source>Quantizing weights</source>
        <translation>正在量化权重</translation>
    </message>
    <message>
        <source>Planning memory</source>
        <translation>正在规划内存</translation>
    </message>
    <message>
        <source>Capturing decode graphs</source>
        <translation>正在捕获解码图</translation>
    </message>
    <message>
        <source>Ready</source>
        <translation>就绪</translation>
    </message>
    <message>
        <source>The engine is already applying other settings</source>
        <translation>引擎正在应用其他设置</translation>
    </message>
    <message>
        <source>Applying settings</source>
        <translation>正在应用设置</translation>
    </message>
    <message>
        <source>Loading was cancelled</source>
        <translation>加载已取消</translation>
    </message>
</context>
<context>
    <name>folio::EngineStatus</name>
    <message>
        <source>Device memory used by Folio, of the device&apos;s total; with several devices, each device&apos;s memory and its requests running and waiting</source>
        <translation>Folio 占用的设备内存 / 设备总内存；多个设备时为每个设备的内存及其运行和等待中的请求</translation>
    </message>
    <message>
        <source>%1 failed</source>
        <translation>%1 已失败</translation>
    </message>
    <message>
        <source>%1 %2, load %3</source>
        <translation>%1 %2，负载 %3</translation>
    </message>
    <message>
        <source>KV-cache blocks in use</source>
        <translation>正在使用的 KV 缓存块</translation>
    </message>
    <message>
        <source>Tokens generated per second over the last seconds</source>
        <translation>最近几秒每秒生成的词元数</translation>
    </message>
    <message>
        <source>No model loaded</source>
        <translation>未加载模型</translation>
    </message>
    <message>
        <source>VRAM %1 / %2</source>
        <translation>显存 %1 / %2</translation>
    </message>
    <message>
        <source>Memory %1</source>
        <translation>内存 %1</translation>
    </message>
    <message>
        <source>KV %1%</source>
        <translation>KV %1%</translation>
    </message>
    <message>
        <source>%1 tok/s</source>
        <translation>%1 词元/秒</translation>
    </message>
</context>
<context>
    <name>folio::ErrorPanel</name>
    <message>
        <source>Problems</source>
        <translation>问题</translation>
    </message>
    <message>
        <source>Clear</source>
        <translation>清除</translation>
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
        <source>Layout model</source>
        <translation>版面模型</translation>
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
        <source>Settings</source>
        <translation>设置</translation>
    </message>
    <message>
        <source>Settings › %1 › %2</source>
        <translation>设置 › %1 › %2</translation>
    </message>
    <message>
        <source>Double-click to open %1</source>
        <translation>双击打开%1</translation>
    </message>
    <message>
        <source>Open %1…</source>
        <translation>打开%1…</translation>
    </message>
    <message>
        <source>Chat model</source>
        <translation>对话模型</translation>
    </message>
</context>
<context>
    <name>folio::ExportDialog</name>
    <message>
        <source>Export</source>
        <translation>导出</translation>
    </message>
    <message>
        <source>Choose…</source>
        <translation>选择…</translation>
    </message>
    <message>
        <source>Export to</source>
        <translation>导出到</translation>
    </message>
    <message>
        <source>Folder:</source>
        <translation>文件夹：</translation>
    </message>
    <message numerus="yes">
        <source>All %n page(s); or, for example, 1-3, 8</source>
        <translation>
            <numerusform>全部 %n 页；或者例如 1-3, 8</numerusform>
        </translation>
    </message>
    <message>
        <source>Pages:</source>
        <translation>页面：</translation>
    </message>
    <message>
        <source>the document</source>
        <translation>该文档</translation>
    </message>
</context>
<context>
    <name>folio::FindBar</name>
    <message>
        <source>No document</source>
        <translation>没有文档</translation>
    </message>
    <message>
        <source>Not found</source>
        <translation>未找到</translation>
    </message>
    <message numerus="yes">
        <source>%n match(es)</source>
        <translation>
            <numerusform>%n 个匹配</numerusform>
        </translation>
    </message>
    <message>
        <source>%1 of %2</source>
        <translation>第 %1 个，共 %2 个</translation>
    </message>
    <message>
        <source>Find in the results</source>
        <translation>在识别结果中查找</translation>
    </message>
    <message>
        <source>Previous match (Shift+F3)</source>
        <translation>上一个匹配 (Shift+F3)</translation>
    </message>
    <message>
        <source>Next match (F3)</source>
        <translation>下一个匹配 (F3)</translation>
    </message>
    <message>
        <source>Match case</source>
        <translation>区分大小写</translation>
    </message>
    <message>
        <source>Close the find bar (Esc)</source>
        <translation>关闭查找栏 (Esc)</translation>
    </message>
    <message>
        <source>Previous match</source>
        <translation>上一个匹配</translation>
    </message>
    <message>
        <source>Next match</source>
        <translation>下一个匹配</translation>
    </message>
    <message>
        <source>Close the find bar</source>
        <translation>关闭查找栏</translation>
    </message>
</context>
<context>
    <name>folio::InstalledModels</name>
    <message>
        <source>No PaddleOCR-VL model is installed. Download one with the model manager or with &quot;folio-cli model pull PaddlePaddle/PaddleOCR-VL-1.5&quot;, or choose a model folder.</source>
        <translation>未安装 PaddleOCR-VL 模型。请用模型管理器或“folio-cli model pull PaddlePaddle/PaddleOCR-VL-1.5”下载一个，或选择一个模型文件夹。</translation>
    </message>
</context>
<context>
    <name>folio::JobController</name>
    <message>
        <source>Re-run block %1 as %2</source>
        <translation>将块 %1 重新识别为%2</translation>
    </message>
    <message>
        <source>Draw a box as %1</source>
        <translation>绘制%1框</translation>
    </message>
    <message>
        <source>%1, page %2: run the document before recognising its blocks</source>
        <translation>%1，第 %2 页：请先运行文档，再识别其中的块</translation>
    </message>
</context>
<context>
    <name>folio::LayoutLabel</name>
    <message>
        <source>Abstract</source>
        <translation>摘要</translation>
    </message>
    <message>
        <source>Algorithm</source>
        <translation>算法</translation>
    </message>
    <message>
        <source>Aside text</source>
        <translation>侧栏文本</translation>
    </message>
    <message>
        <source>Chart</source>
        <translation>图表</translation>
    </message>
    <message>
        <source>Content</source>
        <translation>目录</translation>
    </message>
    <message>
        <source>Display formula</source>
        <translation>行间公式</translation>
    </message>
    <message>
        <source>Doc title</source>
        <translation>文档标题</translation>
    </message>
    <message>
        <source>Figure title</source>
        <translation>图表标题</translation>
    </message>
    <message>
        <source>Footer</source>
        <translation>页脚</translation>
    </message>
    <message>
        <source>Footer image</source>
        <translation>页脚图片</translation>
    </message>
    <message>
        <source>Footnote</source>
        <translation>脚注</translation>
    </message>
    <message>
        <source>Formula number</source>
        <translation>公式编号</translation>
    </message>
    <message>
        <source>Header</source>
        <translation>页眉</translation>
    </message>
    <message>
        <source>Header image</source>
        <translation>页眉图片</translation>
    </message>
    <message>
        <source>Image</source>
        <translation>图片</translation>
    </message>
    <message>
        <source>Inline formula</source>
        <translation>行内公式</translation>
    </message>
    <message>
        <source>Number</source>
        <translation>页码</translation>
    </message>
    <message>
        <source>Paragraph title</source>
        <translation>段落标题</translation>
    </message>
    <message>
        <source>Reference</source>
        <translation>参考文献</translation>
    </message>
    <message>
        <source>Reference content</source>
        <translation>参考文献内容</translation>
    </message>
    <message>
        <source>Seal</source>
        <translation>印章</translation>
    </message>
    <message>
        <source>Table</source>
        <translation>表格</translation>
    </message>
    <message>
        <source>Text</source>
        <translation>文本</translation>
    </message>
    <message>
        <source>Vertical text</source>
        <translation>竖排文本</translation>
    </message>
    <message>
        <source>Vision footnote</source>
        <translation>视觉脚注</translation>
    </message>
</context>
<context>
    <name>folio::MainWindow</name>
    <message>
        <source>&amp;Open Files…</source>
        <translation>打开文件(&amp;O)…</translation>
    </message>
    <message>
        <source>Open documents</source>
        <translation>打开文档</translation>
    </message>
    <message>
        <source>Documents (*.pdf *.png *.jpg *.jpeg *.tif *.tiff *.bmp *.webp);;All files (*)</source>
        <translation>文档 (*.pdf *.png *.jpg *.jpeg *.tif *.tiff *.bmp *.webp);;所有文件 (*)</translation>
    </message>
    <message>
        <source>Open &amp;Folder…</source>
        <translation>打开文件夹(&amp;F)…</translation>
    </message>
    <message>
        <source>Ctrl+Shift+O</source>
        <translation>Ctrl+Shift+O</translation>
    </message>
    <message>
        <source>Open a folder of documents</source>
        <translation>打开文档文件夹</translation>
    </message>
    <message>
        <source>&amp;Export…</source>
        <translation>导出(&amp;E)…</translation>
    </message>
    <message>
        <source>Ctrl+E</source>
        <translation>Ctrl+E</translation>
    </message>
    <message>
        <source>&amp;Quit</source>
        <translation>退出(&amp;Q)</translation>
    </message>
    <message>
        <source>Choose &amp;Model Folder…</source>
        <translation>选择模型文件夹(&amp;M)…</translation>
    </message>
    <message>
        <source>&amp;Run</source>
        <translation>运行(&amp;R)</translation>
    </message>
    <message>
        <source>Ctrl+R</source>
        <translation>Ctrl+R</translation>
    </message>
    <message>
        <source>&amp;Cancel</source>
        <translation>取消(&amp;C)</translation>
    </message>
    <message>
        <source>Ctrl+.</source>
        <translation>Ctrl+.</translation>
    </message>
    <message>
        <source>Zoom &amp;In</source>
        <translation>放大(&amp;I)</translation>
    </message>
    <message>
        <source>Zoom &amp;Out</source>
        <translation>缩小(&amp;O)</translation>
    </message>
    <message>
        <source>&amp;Fit Width</source>
        <translation>适合宽度(&amp;F)</translation>
    </message>
    <message>
        <source>Ctrl+0</source>
        <translation>Ctrl+0</translation>
    </message>
    <message>
        <source>&amp;Next Page</source>
        <translation>下一页(&amp;N)</translation>
    </message>
    <message>
        <source>&amp;Previous Page</source>
        <translation>上一页(&amp;P)</translation>
    </message>
    <message>
        <source>&amp;Edit Text…</source>
        <translation>编辑文本(&amp;E)…</translation>
    </message>
    <message>
        <source>&amp;Copy Text</source>
        <translation>复制文本(&amp;C)</translation>
    </message>
    <message>
        <source>Ctrl+Shift+C</source>
        <translation>Ctrl+Shift+C</translation>
    </message>
    <message>
        <source>&amp;Delete Block</source>
        <translation>删除块(&amp;D)</translation>
    </message>
    <message>
        <source>Draw &amp;Box</source>
        <translation>绘制框(&amp;B)</translation>
    </message>
    <message>
        <source>Ctrl+D</source>
        <translation>Ctrl+D</translation>
    </message>
    <message>
        <source>&amp;Settings…</source>
        <translation>设置(&amp;S)…</translation>
    </message>
    <message>
        <source>Settings</source>
        <translation>设置</translation>
    </message>
    <message>
        <source>&amp;Model Manager…</source>
        <translation>模型管理器(&amp;M)…</translation>
    </message>
    <message>
        <source>The model manager</source>
        <translation>模型管理器</translation>
    </message>
    <message>
        <source>%1 is not available in this build</source>
        <translation>此版本不提供%1</translation>
    </message>
    <message>
        <source>&amp;File</source>
        <translation>文件(&amp;F)</translation>
    </message>
    <message>
        <source>Open &amp;Recent</source>
        <translation>最近打开(&amp;R)</translation>
    </message>
    <message>
        <source>&amp;View</source>
        <translation>视图(&amp;V)</translation>
    </message>
    <message>
        <source>&amp;Block</source>
        <translation>块(&amp;B)</translation>
    </message>
    <message>
        <source>&amp;Re-run As</source>
        <translation>重新识别为(&amp;R)</translation>
    </message>
    <message>
        <source>&amp;Tools</source>
        <translation>工具(&amp;T)</translation>
    </message>
    <message>
        <source>&amp;Help</source>
        <translation>帮助(&amp;H)</translation>
    </message>
    <message>
        <source>&amp;About Folio</source>
        <translation>关于 Folio(&amp;A)</translation>
    </message>
    <message>
        <source>About Folio</source>
        <translation>关于 Folio</translation>
    </message>
    <message>
        <source>&lt;b&gt;Folio&lt;/b&gt; %1&lt;br&gt;Documents to Markdown with PaddleOCR-VL, on your own GPU.</source>
        <translation>&lt;b&gt;Folio&lt;/b&gt; %1&lt;br&gt;在您自己的 GPU 上用 PaddleOCR-VL 将文档转换为 Markdown。</translation>
    </message>
    <message>
        <source>Main</source>
        <translation>主工具栏</translation>
    </message>
    <message>
        <source>Starting…</source>
        <translation>正在启动…</translation>
    </message>
    <message>
        <source>%1 of %2 pages · %3 of %4 blocks</source>
        <translation>第 %1 / %2 页 · 第 %3 / %4 块</translation>
    </message>
    <message>
        <source> · about %1 s left</source>
        <translation> · 约剩 %1 秒</translation>
    </message>
    <message>
        <source>Cancelled after %1 pages</source>
        <translation>已在 %1 页后取消</translation>
    </message>
    <message>
        <source>Done: %1 pages, %2 blocks in %3 s</source>
        <translation>完成：%1 页，%2 个块，用时 %3 秒</translation>
    </message>
    <message>
        <source>No model loaded</source>
        <translation>未加载模型</translation>
    </message>
    <message>
        <source>The model could not be loaded: %1</source>
        <translation>无法加载模型：%1</translation>
    </message>
    <message>
        <source>Settings applied to the engine</source>
        <translation>设置已应用到引擎</translation>
    </message>
    <message>
        <source>The settings could not be applied; the engine keeps its previous ones: %1</source>
        <translation>无法应用设置；引擎保持原有设置：%1</translation>
    </message>
    <message>
        <source>The engine stopped while applying the settings: %1</source>
        <translation>应用设置时引擎停止了：%1</translation>
    </message>
    <message numerus="yes">
        <source>Exported %n file(s)</source>
        <translation>
            <numerusform>已导出 %n 个文件</numerusform>
        </translation>
    </message>
    <message>
        <source>Export failed: %1</source>
        <translation>导出失败：%1</translation>
    </message>
    <message>
        <source>Export of “%1”: %2</source>
        <translation>“%1”的导出：%2</translation>
    </message>
    <message>
        <source>No device is set up to load models on</source>
        <translation>没有可加载模型的设备</translation>
    </message>
    <message>
        <source>Looking for models</source>
        <translation>正在查找模型</translation>
    </message>
    <message>
        <source>No model installed</source>
        <translation>未安装模型</translation>
    </message>
    <message>
        <source>No PaddleOCR-VL model found: choose a model folder (File menu) or download one with the model manager</source>
        <translation>未找到 PaddleOCR-VL 模型：请选择模型文件夹（文件菜单）或通过模型管理器下载</translation>
    </message>
    <message>
        <source>Choose a PaddleOCR-VL model folder</source>
        <translation>选择 PaddleOCR-VL 模型文件夹</translation>
    </message>
    <message>
        <source>The documents run once the model is loaded</source>
        <translation>模型加载后即开始处理文档</translation>
    </message>
    <message>
        <source>%1 · %2/%3 pages</source>
        <translation>%1 · %2/%3 页</translation>
    </message>
    <message numerus="yes">
        <source>%1 · %n page(s)</source>
        <translation>
            <numerusform>%1 · %n 页</numerusform>
        </translation>
    </message>
    <message>
        <source>Cancelling…</source>
        <translation>正在取消…</translation>
    </message>
    <message>
        <source>Edit block %1</source>
        <translation>编辑块 %1</translation>
    </message>
    <message>
        <source>Text (Markdown; tables as HTML):</source>
        <translation>文本（Markdown；表格为 HTML）：</translation>
    </message>
    <message>
        <source>Copied block %1</source>
        <translation>已复制块 %1</translation>
    </message>
    <message>
        <source>Recognise as</source>
        <translation>识别为</translation>
    </message>
    <message>
        <source>Exporting to %1…</source>
        <translation>正在导出到 %1…</translation>
    </message>
    <message>
        <source>The chat model could not be found: %1</source>
        <translation>找不到对话模型：%1</translation>
    </message>
    <message>
        <source>&amp;Close Document</source>
        <translation>关闭文档(&amp;C)</translation>
    </message>
    <message>
        <source>Run &amp;All Pages Again</source>
        <translation>重新运行所有页面(&amp;A)</translation>
    </message>
    <message>
        <source>Ctrl+Shift+R</source>
        <translation>Ctrl+Shift+R</translation>
    </message>
    <message>
        <source>Ctrl+Shift+Z</source>
        <translation>Ctrl+Shift+Z</translation>
    </message>
    <message>
        <source>Ctrl+Y</source>
        <translation>Ctrl+Y</translation>
    </message>
    <message>
        <source>&amp;Close</source>
        <translation>关闭(&amp;C)</translation>
    </message>
    <message>
        <source>&amp;Edit</source>
        <translation>编辑(&amp;E)</translation>
    </message>
    <message>
        <source>Re-run block</source>
        <translation>重新识别块</translation>
    </message>
    <message>
        <source>You edited the text of block %1. Running it again replaces your text (Undo brings it back).</source>
        <translation>你编辑过块 %1 的文本。重新识别会替换你的文本（可用撤销恢复）。</translation>
    </message>
    <message>
        <source>Re-run</source>
        <translation>重新识别</translation>
    </message>
    <message>
        <source>The session was not saved: %1</source>
        <translation>会话未能保存：%1</translation>
    </message>
    <message>
        <source>“%1” changed since its results were saved: they show until you run it again (Run)</source>
        <translation>“%1”在结果保存后已被修改：在重新运行（运行）之前仍显示原结果</translation>
    </message>
    <message>
        <source>waiting for a model</source>
        <translation>等待模型</translation>
    </message>
    <message>
        <source> · file changed</source>
        <translation> · 文件已更改</translation>
    </message>
    <message>
        <source>not run</source>
        <translation>未运行</translation>
    </message>
    <message>
        <source>recognising</source>
        <translation>识别中</translation>
    </message>
    <message>
        <source>done</source>
        <translation>完成</translation>
    </message>
    <message>
        <source>failed</source>
        <translation>失败</translation>
    </message>
    <message>
        <source>partly recognised</source>
        <translation>部分已识别</translation>
    </message>
    <message>
        <source>Page %1 · %2 · %3 blocks</source>
        <translation>第 %1 页 · %2 · %3 个块</translation>
    </message>
    <message>
        <source>Close document</source>
        <translation>关闭文档</translation>
    </message>
    <message>
        <source>“%1” has changes of yours that were not exported. Close it and lose them?</source>
        <translation>“%1”有尚未导出的修改。关闭并丢弃这些修改吗？</translation>
    </message>
    <message>
        <source>Close Without Exporting</source>
        <translation>不导出直接关闭</translation>
    </message>
    <message>
        <source>Running the pages without a result</source>
        <translation>正在运行尚无结果的页面</translation>
    </message>
    <message>
        <source>Run again</source>
        <translation>重新运行</translation>
    </message>
    <message numerus="yes">
        <source>%n page(s) of “%1” have changes of yours: edited text, deleted blocks, boxes drawn or blocks re-run. Running them again replaces those changes.</source>
        <translation>
            <numerusform>“%1”中有 %n 页包含你的修改：编辑过的文本、删除的块、绘制的框或重新识别的块。重新运行会替换这些修改。</numerusform>
        </translation>
    </message>
    <message>
        <source>Run the Other Pages</source>
        <translation>运行其他页面</translation>
    </message>
    <message>
        <source>Run Every Page</source>
        <translation>运行所有页面</translation>
    </message>
    <message>
        <source>Every page has changes of yours: nothing else to run</source>
        <translation>每一页都有你的修改：没有其他可运行的页面</translation>
    </message>
    <message>
        <source>The result view: %1</source>
        <translation>结果视图：%1</translation>
    </message>
    <message>
        <source>Encrypted PDF</source>
        <translation>加密的 PDF</translation>
    </message>
    <message>
        <source>The password does not open “%1”. Its password:</source>
        <translation>该密码无法打开“%1”。请输入其密码：</translation>
    </message>
    <message>
        <source>“%1” is encrypted. Its password:</source>
        <translation>“%1”已加密。请输入其密码：</translation>
    </message>
    <message>
        <source>&amp;Find…</source>
        <translation>查找(&amp;F)…</translation>
    </message>
    <message>
        <source>Find &amp;Next</source>
        <translation>查找下一个(&amp;N)</translation>
    </message>
    <message>
        <source>Find Pre&amp;vious</source>
        <translation>查找上一个(&amp;V)</translation>
    </message>
    <message>
        <source>&amp;Keyboard Shortcuts</source>
        <translation>键盘快捷键(&amp;K)</translation>
    </message>
    <message>
        <source>Undo</source>
        <translation>撤销</translation>
    </message>
    <message>
        <source>Redo</source>
        <translation>重做</translation>
    </message>
    <message>
        <source>&amp;Go to Page…</source>
        <translation>转到页面(&amp;G)…</translation>
    </message>
    <message>
        <source>Ctrl+G</source>
        <translation>Ctrl+G</translation>
    </message>
    <message>
        <source>Go to Page</source>
        <translation>转到页面</translation>
    </message>
    <message>
        <source>Page (1–%1):</source>
        <translation>页码 (1–%1)：</translation>
    </message>
    <message>
        <source>Copy &amp;Page Text</source>
        <translation>复制本页文本(&amp;P)</translation>
    </message>
    <message>
        <source>Ctrl+Alt+C</source>
        <translation>Ctrl+Alt+C</translation>
    </message>
    <message>
        <source>Page %1 has no text to copy yet</source>
        <translation>第 %1 页还没有可复制的文本</translation>
    </message>
    <message>
        <source>Copied the text of page %1</source>
        <translation>已复制第 %1 页的文本</translation>
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
    <message>
        <source>chat</source>
        <translation>对话</translation>
    </message>
    <message>
        <source>in use: %1</source>
        <translation>使用中：%1</translation>
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
    <name>folio::ResultView</name>
    <message>
        <source>Document</source>
        <translation>文档</translation>
    </message>
    <message>
        <source>Markdown</source>
        <translation>Markdown</translation>
    </message>
    <message>
        <source>not recognised: the run stopped first</source>
        <translation>未识别：运行在此之前已停止</translation>
    </message>
    <message>
        <source>read with block %1</source>
        <translation>随块 %1 一并识别</translation>
    </message>
    <message>
        <source>recognising…</source>
        <translation>识别中…</translation>
    </message>
    <message>
        <source>(empty)</source>
        <translation>（空）</translation>
    </message>
    <message>
        <source>Page %1</source>
        <translation>第 %1 页</translation>
    </message>
    <message>
        <source>Not recognised yet.</source>
        <translation>尚未识别。</translation>
    </message>
    <message>
        <source>No blocks on this page.</source>
        <translation>此页没有块。</translation>
    </message>
</context>
<context>
    <name>folio::SessionStore</name>
    <message>
        <source>%1 is gone: its results were not restored</source>
        <translation>%1 已不存在：其结果未恢复</translation>
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
        <source>Device: expected cpu, cuda:N or cuda:N,cuda:M,…, got &quot;%1&quot;</source>
        <translation>设备：应为 cpu、cuda:N 或 cuda:N,cuda:M,…，实际为“%1”</translation>
    </message>
    <message>
        <source>Tensor parallelism splits each model over several cards; choose two or more</source>
        <translation>张量并行会把每个模型拆分到多张显卡上；请选择两张或更多</translation>
    </message>
    <message>
        <source>Vision encoder: expected none or fp8, got &quot;%1&quot;</source>
        <translation>视觉编码器：应为 none 或 fp8，实际为“%1”</translation>
    </message>
    <message>
        <source>Vision encoder: FP8 runs on a GPU of compute capability 8.9 or later, not on the CPU</source>
        <translation>视觉编码器：FP8 需在计算能力 8.9 及以上的 GPU 上运行，不能在 CPU 上运行</translation>
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
        <source>Language: expected en or zh_CN, got &quot;%1&quot;</source>
        <translation>语言：应为 en 或 zh_CN，实际为“%1”</translation>
    </message>
    <message>
        <source>Chat model: &quot;%1&quot; is neither a folder nor a Hub repository (ORG/NAME)</source>
        <translation>对话模型：“%1”既不是文件夹，也不是 Hub 仓库（ORG/NAME）</translation>
    </message>
    <message>
        <source>Export: unknown format &quot;%1&quot; (expected md, json, html, pdf, xlsx or docx)</source>
        <translation>导出：未知格式“%1”（可选 md、json、html、pdf、xlsx 或 docx）</translation>
    </message>
    <message>
        <source>The context length (Settings &gt; Engine &gt; Context length) is %1 tokens; the model was made for %2, which the engine uses</source>
        <translation>上下文长度（设置 &gt; 引擎 &gt; 上下文长度）为 %1 个词元；模型的设计长度为 %2，引擎将使用后者</translation>
    </message>
</context>
<context>
    <name>folio::SettingsBinding</name>
    <message>
        <source>The engine takes the new settings when the current run ends</source>
        <translation>当前运行结束后引擎将采用新设置</translation>
    </message>
    <message>
        <source>The settings could not be applied: %1</source>
        <translation>无法应用设置：%1</translation>
    </message>
    <message>
        <source>No NVIDIA GPU was found (or its driver is not loaded): Folio runs on the CPU, where a page takes minutes rather than a fraction of a second</source>
        <translation>未找到 NVIDIA GPU（或其驱动未加载）：Folio 在 CPU 上运行，每页需要数分钟，而不是不到一秒</translation>
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
        <source>KV cache</source>
        <translation>KV 缓存</translation>
    </message>
    <message>
        <source>As the model computes (bfloat16 on a GPU)</source>
        <translation>与模型计算精度相同（GPU 上为 bfloat16）</translation>
    </message>
    <message>
        <source>8-bit (about half the memory: longer contexts)</source>
        <translation>8 位（约一半内存：可容纳更长上下文）</translation>
    </message>
    <message>
        <source>Split each model over the cards (tensor parallelism) instead of a copy on each</source>
        <translation>把每个模型拆分到各张显卡上（张量并行），而不是每张卡各放一份</translation>
    </message>
    <message>
        <source>For models larger than one card: every card holds part of each layer (--tensor-parallel-size)</source>
        <translation>用于单张显卡放不下的模型：每张卡保存每一层的一部分（--tensor-parallel-size）</translation>
    </message>
    <message>
        <source>Vision encoder</source>
        <translation>视觉编码器</translation>
    </message>
    <message>
        <source>FP8 (faster on RTX 40 series and later cards, less exact)</source>
        <translation>FP8（在 RTX 40 系列及更新的显卡上更快，精度略低）</translation>
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
        <source>Word document (.docx)</source>
        <translation>Word 文档（.docx）</translation>
    </message>
    <message>
        <source>These are FastDeploy&apos;s serving options, with its names and ranges. The KV cache takes what GPU memory utilization leaves after the weights.</source>
        <translation>这些是 FastDeploy 的服务参数，名称与取值范围与其一致。KV 缓存使用显存占用比例中扣除权重后剩余的部分。</translation>
    </message>
    <message>
        <source>Chat model</source>
        <translation>对话模型</translation>
    </message>
    <message>
        <source>The first chat model installed (ERNIE-4.5-VL), else none</source>
        <translation>第一个已安装的对话模型（ERNIE-4.5-VL），没有则不使用</translation>
    </message>
    <message>
        <source>Chat models…</source>
        <translation>对话模型…</translation>
    </message>
    <message>
        <source>Download or choose a chat model</source>
        <translation>下载或选择对话模型</translation>
    </message>
    <message>
        <source>Choose a chat model folder</source>
        <translation>选择对话模型文件夹</translation>
    </message>
    <message>
        <source>Automatic (16384, or the model&apos;s context if less)</source>
        <translation>自动（16384，模型上下文更短时取其长度）</translation>
    </message>
    <message>
        <source>The first PaddleOCR-VL model installed, or the command line&apos;s (now %1)</source>
        <translation>第一个已安装的 PaddleOCR-VL 模型，或命令行指定的模型（当前为 %1）</translation>
    </message>
    <message>
        <source>The first chat model installed (ERNIE-4.5-VL), else none (now %1)</source>
        <translation>第一个已安装的对话模型（ERNIE-4.5-VL），没有则不使用（当前为 %1）</translation>
    </message>
</context>
<context>
    <name>folio::ShortcutsDialog</name>
    <message>
        <source>Find bar</source>
        <translation>查找栏</translation>
    </message>
    <message>
        <source>Next match</source>
        <translation>下一个匹配</translation>
    </message>
    <message>
        <source>Previous match</source>
        <translation>上一个匹配</translation>
    </message>
    <message>
        <source>Close the find bar</source>
        <translation>关闭查找栏</translation>
    </message>
    <message>
        <source>Document list</source>
        <translation>文档列表</translation>
    </message>
    <message>
        <source>Close the selected document</source>
        <translation>关闭所选文档</translation>
    </message>
    <message>
        <source>Keyboard Shortcuts</source>
        <translation>键盘快捷键</translation>
    </message>
    <message>
        <source>Where</source>
        <translation>位置</translation>
    </message>
    <message>
        <source>Action</source>
        <translation>操作</translation>
    </message>
    <message>
        <source>Keys</source>
        <translation>按键</translation>
    </message>
</context>
</TS>
