#include "app/server/pipeline-document-parser.h"

#include <QBuffer>
#include <QDir>
#include <QFile>
#include <QPainter>
#include <QTemporaryDir>
#include <atomic>
#include <deque>
#include <thread>

#include "app/documents/file-type.h"
#include "app/export/document-writer.h"
#include "app/export/figure-store.h"
#include "app/export/json-writer.h"
#include "app/export/markdown-block.h"
#include "app/export/markdown-writer.h"
#include "app/export/table-merger.h"
#include "app/pipeline/source-input.h"
#include "engine/common/error.h"
#include "engine/layout/layout-labels.h"

namespace folio {
namespace {

using server::ApiError;
using Json = nlohmann::ordered_json;

[[noreturn]] void unprocessable(const std::string& message, const std::string& param = "file") {
    throw ApiError(422, "invalid_request_error", message, param);
}

std::string base64(const QByteArray& bytes) {
    return server::encode_base64(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.constData()),
                                                          static_cast<size_t>(bytes.size())));
}

// The image as JPEG, scaled down to fit a side x side square.
std::string jpegBase64(QImage image, int side) {
    if (image.width() > side || image.height() > side) {
        image = image.scaled(side, side, Qt::KeepAspectRatio, Qt::SmoothTransformation);
    }
    QByteArray bytes;
    QBuffer buffer(&bytes);
    buffer.open(QIODevice::WriteOnly);
    if (!image.save(&buffer, "JPG", 95)) {
        fail("cannot encode a page image as JPEG");
    }
    return base64(bytes);
}

// The page with its blocks' boxes, labels and reading order drawn over it.
QImage layoutPicture(const PageResult& page) {
    QImage picture = page.image.convertToFormat(QImage::Format_RGB32);
    QPainter painter(&picture);
    painter.setRenderHint(QPainter::Antialiasing);
    QFont font = painter.font();
    font.setPixelSize(std::max(12, picture.height() / 80));
    painter.setFont(font);
    for (const BlockResult& block : page.blocks) {
        const int hue = static_cast<int>(qHash(block.label) % 360);
        const QColor color = QColor::fromHsv(hue, 200, 220);
        const QRectF box(QPointF(block.box.x1, block.box.y1), QPointF(block.box.x2, block.box.y2));
        painter.setPen(QPen(color, std::max(2, picture.height() / 500)));
        painter.setBrush(Qt::NoBrush);
        if (!block.polygon.isEmpty()) {
            painter.drawPolygon(block.polygon);
        } else {
            painter.drawRect(box);
        }
        const QString caption =
            block.order > 0 ? QStringLiteral("%1 %2").arg(block.order).arg(block.label) : block.label;
        const QRectF text = painter.fontMetrics().boundingRect(caption).toRectF().translated(box.topLeft());
        painter.fillRect(text.translated(0, -text.top() + box.top()), color);
        painter.setPen(Qt::white);
        painter.drawText(text.translated(0, -text.top() + box.top()), Qt::AlignLeft | Qt::AlignTop, caption);
    }
    painter.end();
    return picture;
}

// What a page's result needs besides its text, taken while the page still has its images: its figures' links
// and bytes, and the visualised images.
struct PageExtras {
    std::vector<QString> links;
    Json images = Json::object();  // link -> base64 JPEG
    std::optional<std::string> inputImage;
    std::optional<std::string> layoutImage;
};

class ParserObserver : public PipelineObserver {
public:
    ParserObserver(const server::LayoutParsingRequest& request, const PipelineParserParams& params,
                   QSet<QString> labels, QString workDir,
                   const std::function<void(server::ParsedPage)>& onPage)
        : request_(request),
          params_(params),
          labels_(std::move(labels)),
          workDir_(std::move(workDir)),
          onPage_(onPage) {
        visualize_ = request.visualize.value_or(params.visualizeByDefault);
        restructure_ = request.restructure_pages && request.merge_tables;
        if (request.docx) {
            ExportOptions options;
            options.outputDir = QDir(workDir_).filePath(QStringLiteral("docx"));
            options.markdownLabels = labels_;
            docx_ = makeDocumentWriter(ExportFormat::Docx, options);
        }
    }

    void documentStarted(const DocumentInfo& document) override {
        document_ = document;
        if (docx_) {
            docx_->begin(document);
        }
    }

    void pageFinished(const DocumentInfo&, const PageResult& page) override {
        if (!page.error.isEmpty() && pageError_.isEmpty()) {
            pageError_ = page.pageIndex >= 0
                             ? QStringLiteral("page %1: %2").arg(page.pageIndex + 1).arg(page.error)
                             : page.error;
        }
        sizes_.push_back({page.width, page.height});
        if (docx_) {
            docx_->addPage(page);
        }
        extras_.push_back(takeExtras(page));
        PageResult text = page;
        text.image = QImage();
        for (BlockResult& block : text.blocks) {
            block.image = QImage();
        }
        if (restructure_) {
            merger_.push(std::move(text));
            emitReady(merger_.takeReady());
        } else {
            emitReady({std::move(text)});
        }
    }

    void documentFinished(const DocumentInfo&, const DocumentOutcome& outcome) override {
        outcome_ = outcome;
        if (restructure_) {
            merger_.finish();
            emitReady(merger_.takeReady());
        }
    }

    const DocumentOutcome& outcome() const { return outcome_; }
    const QString& pageError() const { return pageError_; }
    const std::vector<std::pair<int, int>>& sizes() const { return sizes_; }
    DocumentWriter* docx() { return docx_.get(); }

private:
    PageExtras takeExtras(const PageResult& page) {
        PageExtras extras;
        extras.links.resize(page.blocks.size());
        if (request_.return_markdown_images) {
            // Each page's figures in a folder of their own, named as folio-cli ocr names them.
            const QString dir = QDir(workDir_).filePath(QStringLiteral("figures-%1").arg(pageNumber_));
            if (!QDir().mkpath(dir)) {
                fail(dir.toStdString(), ": cannot create a folder for the figures");
            }
            FigureStore figures;
            figures.begin(dir, document_.stem);
            for (size_t i = 0; i < page.blocks.size(); ++i) {
                const BlockResult& block = page.blocks[i];
                if (!block.image.isNull() && labels_.contains(block.label)) {
                    extras.links[i] = figures.add(block);
                }
            }
            figures.commit();
            for (const QString& link : extras.links) {
                if (link.isEmpty()) {
                    continue;
                }
                QFile file(QDir(dir).filePath(link));
                if (!file.open(QIODevice::ReadOnly)) {
                    fail(file.fileName().toStdString(), ": cannot read a saved figure");
                }
                extras.images[link.toStdString()] = base64(file.readAll());
            }
            QDir(dir).removeRecursively();
        }
        if (visualize_ && !page.image.isNull()) {
            extras.inputImage = jpegBase64(page.image, params_.maxOutputImageSide);
            extras.layoutImage = jpegBase64(layoutPicture(page), params_.maxOutputImageSide);
        }
        ++pageNumber_;
        return extras;
    }

    void emitReady(std::vector<PageResult> pages) {
        for (PageResult& page : pages) {
            PageExtras extras = std::move(extras_.front());
            extras_.pop_front();
            const int firstBlockId = blocksBefore_;
            blocksBefore_ += static_cast<int>(page.blocks.size());
            server::ParsedPage parsed;
            parsed.markdown = markdownOfPage(page, labels_, extras.links).toStdString();
            Json& result = parsed.result;
            result["prunedResult"] = server::prune_result(jsonOfPage(page, firstBlockId, labels_));
            result["markdown"] = Json{{"text", parsed.markdown}, {"images", std::move(extras.images)}};
            if (extras.layoutImage) {
                result["outputImages"] = Json{{"layout_det_res", *extras.layoutImage}};
                result["inputImage"] = *extras.inputImage;
            }
            onPage_(std::move(parsed));
        }
    }

    const server::LayoutParsingRequest& request_;
    const PipelineParserParams& params_;
    QSet<QString> labels_;
    QString workDir_;
    const std::function<void(server::ParsedPage)>& onPage_;
    bool visualize_ = false;
    bool restructure_ = false;
    DocumentInfo document_;
    std::unique_ptr<DocumentWriter> docx_;
    TableMerger merger_;
    std::deque<PageExtras> extras_;  // of the pages pushed and not yet emitted, in order
    std::vector<std::pair<int, int>> sizes_;
    DocumentOutcome outcome_;
    QString pageError_;
    int pageNumber_ = 0;
    int blocksBefore_ = 0;
};

LayoutMergeMode mergeMode(server::BoxMergeMode mode) {
    switch (mode) {
        case server::BoxMergeMode::Large:
            return LayoutMergeMode::Large;
        case server::BoxMergeMode::Small:
            return LayoutMergeMode::Small;
        default:
            return LayoutMergeMode::Union;
    }
}

}  // namespace

QSet<QString> markdownLabelsFor(const server::LayoutParsingRequest& request) {
    if (!request.markdown_ignore_labels) {
        return defaultMarkdownLabels();
    }
    QSet<QString> labels = markdownLabels();
    for (const std::string& label : *request.markdown_ignore_labels) {
        labels.remove(QString::fromStdString(label));
    }
    return labels;
}

PipelineDocumentParser::PipelineDocumentParser(EngineService& service, PipelineParserParams params)
    : service_(service), params_(std::move(params)) {}

PipelineOptions PipelineDocumentParser::optionsFor(const server::LayoutParsingRequest& request) const {
    PipelineOptions options = params_.pipeline;
    RecognitionOptions& recognition = options.recognition;
    options.useLayout = request.use_layout_detection.value_or(options.useLayout);
    if (!options.useLayout) {
        const QString label = QString::fromStdString(request.prompt_label.value_or("ocr"));
        options.wholePageLabel =
            label == QLatin1String("formula") ? QStringLiteral("display_formula") : label;
        recognition.chartRecognition = label == QLatin1String("chart");
        recognition.sealRecognition = label == QLatin1String("seal");
    }
    recognition.chartRecognition = request.use_chart_recognition.value_or(recognition.chartRecognition);
    recognition.sealRecognition = request.use_seal_recognition.value_or(recognition.sealRecognition);
    recognition.ocrForImageBlocks = request.use_ocr_for_image_block.value_or(recognition.ocrForImageBlocks);
    recognition.stackTextBlocks = request.merge_layout_blocks.value_or(recognition.stackTextBlocks);
    if (request.min_pixels || request.max_pixels) {
        // The request's bounds hold for every block, whatever its label.
        recognition.pixels.minPixels = request.min_pixels.value_or(recognition.pixels.minPixels);
        recognition.pixels.maxPixels = request.max_pixels.value_or(recognition.pixels.maxPixels);
        if (recognition.pixels.minPixels > recognition.pixels.maxPixels) {
            unprocessable("minPixels (" + std::to_string(recognition.pixels.minPixels) +
                              ") cannot be greater than maxPixels (" +
                              std::to_string(recognition.pixels.maxPixels) + ")",
                          request.min_pixels ? "minPixels" : "maxPixels");
        }
        recognition.labelPixels.clear();
    }
    if (request.max_new_tokens) {
        recognition.maxNewTokens = static_cast<int>(std::min<int64_t>(*request.max_new_tokens, 1 << 20));
    }
    SamplingParams& sampling = options.sampling;
    sampling.temperature = static_cast<float>(request.temperature.value_or(sampling.temperature));
    sampling.top_p = static_cast<float>(request.top_p.value_or(sampling.top_p));
    sampling.repetition_penalty =
        static_cast<float>(request.repetition_penalty.value_or(sampling.repetition_penalty));

    const bool layoutFields = request.layout_threshold || !request.layout_label_thresholds.empty() ||
                              request.layout_nms || request.layout_unclip_ratio ||
                              request.layout_merge_mode || !request.layout_label_merge_modes.empty();
    if (options.useLayout && layoutFields) {
        std::optional<LayoutRules> rules = options.layoutRules;
        if (!rules) {
            const std::optional<LayoutModelInfo> layout = service_.layout_model();
            if (!layout) {
                fail("the engine has no layout model loaded");
            }
            rules = layout->rules;
        }
        if (request.layout_threshold) {
            rules->thresholds.assign(kLayoutLabelCount, *request.layout_threshold);
            rules->default_threshold = *request.layout_threshold;
        }
        if (request.layout_nms) {
            rules->nms = *request.layout_nms;
        }
        if (request.layout_unclip_ratio) {
            rules->unclip_ratio = *request.layout_unclip_ratio;
        }
        if (request.layout_merge_mode) {
            rules->merge_modes.assign(kLayoutLabelCount, mergeMode(*request.layout_merge_mode));
        }
        if (!request.layout_label_merge_modes.empty()) {
            rules->merge_modes.resize(kLayoutLabelCount, LayoutMergeMode::Union);
            for (const auto& [label, mode] : request.layout_label_merge_modes) {
                rules->merge_modes[static_cast<size_t>(layout_label_id(label))] = mergeMode(mode);
            }
        }
        options.layoutRules = std::move(rules);
        for (const auto& [label, threshold] : request.layout_label_thresholds) {
            options.labelThresholds[label] = threshold;
        }
    }
    return options;
}

server::ParsedDocument PipelineDocumentParser::parse(
    const server::LayoutParsingRequest& request, std::span<const uint8_t> file,
    const std::function<void(server::ParsedPage page)>& on_page, const std::function<bool()>& cancelled) {
    const QByteArrayView head(file.data(),
                              static_cast<qsizetype>(std::min<size_t>(file.size(), kFileTypeProbeBytes)));
    const DetectedType detected = detectFileType(head);
    if (detected.type == FileType::Unsupported) {
        unprocessable("file: the file is " + detected.description.toStdString() + "; send a " +
                      supportedTypesText().toStdString() + " file");
    }
    const server::DocumentFileType actual =
        detected.type == FileType::Pdf ? server::DocumentFileType::Pdf : server::DocumentFileType::Image;
    if (request.file_type && *request.file_type != actual) {
        unprocessable(
            std::string("fileType: ") +
                (*request.file_type == server::DocumentFileType::Pdf ? "0 says a PDF" : "1 says an image") +
                ", but the file is " + detected.description.toStdString(),
            "fileType");
    }
    const PipelineOptions options = optionsFor(request);

    // The file in a folder of its own, which goes with everything written beside it.
    const QTemporaryDir work(QDir(QDir::tempPath()).filePath(QStringLiteral("folio-layout-parsing-XXXXXX")));
    if (!work.isValid()) {
        fail("cannot create a temporary folder in ", QDir::tempPath().toStdString(), ": ",
             work.errorString().toStdString());
    }
    const QString path =
        work.filePath(actual == server::DocumentFileType::Pdf ? QStringLiteral("document.pdf")
                                                              : QStringLiteral("document.img"));
    {
        QFile out(path);
        if (!out.open(QIODevice::WriteOnly) ||
            out.write(reinterpret_cast<const char*>(file.data()), static_cast<qint64>(file.size())) !=
                static_cast<qint64>(file.size()) ||
            !out.flush()) {
            fail(path.toStdString(), ": cannot write the request's file: ", out.errorString().toStdString());
        }
    }

    const DocumentOpener opener = sourceOpener(params_.document, PageRange::parse("all"));
    // The page count before any page is read, so that a file over the limit costs nothing.
    const auto described = [&](const Error& e) {
        std::string message = e.what();
        const std::string named = path.toStdString();
        for (size_t at = message.find(named); at != std::string::npos; at = message.find(named)) {
            message.replace(at, named.size(), "file");
        }
        return message;
    };
    int n_pages = 0;
    try {
        n_pages = opener(path)->selectedCount();
    } catch (const Error& e) {
        unprocessable(described(e));
    }
    if (n_pages > params_.maxPages) {
        unprocessable("file: the document has " + std::to_string(n_pages) +
                      " pages; this server takes at most " + std::to_string(params_.maxPages) +
                      " (--max-pages)");
    }

    ParserObserver observer(request, params_, markdownLabelsFor(request), work.path(), on_page);
    DocumentPipeline pipeline(service_, opener, options);
    std::atomic<bool> finished{false};
    std::thread watcher([&] {
        while (!finished.load()) {
            if (cancelled()) {
                pipeline.cancel();
                return;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
    });
    PipelineSummary summary;
    try {
        summary = pipeline.run({path}, observer);
    } catch (...) {
        finished = true;
        watcher.join();
        if (DocumentWriter* docx = observer.docx()) {
            docx->abort();
        }
        throw;
    }
    finished = true;
    watcher.join();

    if (summary.cancelled || observer.outcome().cancelled) {
        if (DocumentWriter* docx = observer.docx()) {
            docx->abort();
        }
        throw ApiError(499, "invalid_request_error", "the request was cancelled", {}, "cancelled");
    }
    if (!observer.outcome().error.isEmpty()) {
        unprocessable(described(Error(observer.outcome().error.toStdString())));
    }
    if (!observer.pageError().isEmpty()) {
        throw ApiError(500, "server_error", described(Error(observer.pageError().toStdString())));
    }

    server::ParsedDocument document;
    const auto& sizes = observer.sizes();
    if (actual == server::DocumentFileType::Pdf) {
        Json pages = Json::array();
        for (const auto& [width, height] : sizes) {
            pages.push_back(Json{{"width", width}, {"height", height}});
        }
        document.data_info =
            Json{{"numPages", static_cast<int>(sizes.size())}, {"pages", std::move(pages)}, {"type", "pdf"}};
    } else {
        const std::pair<int, int> size = sizes.empty() ? std::pair<int, int>{0, 0} : sizes.front();
        document.data_info = Json{{"width", size.first}, {"height", size.second}, {"type", "image"}};
    }
    if (DocumentWriter* docx = observer.docx()) {
        docx->finish();
        QFile word(docx->files().value(0));
        if (!word.open(QIODevice::ReadOnly)) {
            fail(word.fileName().toStdString(), ": cannot read the Word document written");
        }
        const QByteArray bytes = word.readAll();
        document.docx.assign(bytes.begin(), bytes.end());
        document.docx_name = "document.docx";
    }
    return document;
}

}  // namespace folio
