#include "app/export/json-writer.h"

#include <QStringList>
#include <algorithm>
#include <string_view>
#include <utility>

#include "app/export/markdown-block.h"
#include "engine/layout/layout-labels.h"

namespace folio {
namespace {

using Json = nlohmann::ordered_json;

std::string utf8(const QString& text) {
    return text.toStdString();
}

// PaddleOCR-VL's markdown_ignore_labels: its default ones first, in its order, then any other label left out.
Json ignoredLabels(const QSet<QString>& labels) {
    static const QStringList kDefault = {QStringLiteral("number"),    QStringLiteral("footnote"),
                                         QStringLiteral("header"),    QStringLiteral("header_image"),
                                         QStringLiteral("footer"),    QStringLiteral("footer_image"),
                                         QStringLiteral("aside_text")};
    Json ignored = Json::array();
    for (const QString& label : kDefault) {
        if (!labels.contains(label)) {
            ignored.push_back(utf8(label));
        }
    }
    QStringList others;
    for (const QString& label : markdownLabels()) {
        if (!labels.contains(label) && !kDefault.contains(label)) {
            others.push_back(label);
        }
    }
    others.sort();
    for (const QString& label : others) {
        ignored.push_back(utf8(label));
    }
    return ignored;
}

bool recognised(const PageResult& page, QLatin1String label) {
    return std::any_of(page.blocks.begin(), page.blocks.end(),
                       [&](const BlockResult& b) { return b.label == label && !b.task.isEmpty(); });
}

int classId(const QString& label) {
    const std::string name = utf8(label);
    for (int i = 0; i < kLayoutLabelCount; ++i) {
        if (kLayoutLabels[static_cast<size_t>(i)] == name) {
            return i;
        }
    }
    return -1;
}

Json points(const QPolygonF& polygon) {
    Json list = Json::array();
    for (const QPointF& p : polygon) {
        list.push_back(Json::array({p.x(), p.y()}));
    }
    return list;
}

}  // namespace

Json jsonOfPage(const PageResult& page, int firstBlockId, const QSet<QString>& markdownLabels) {
    Json out;
    out["input_path"] = utf8(page.inputPath);
    out["page_index"] = page.pageIndex >= 0 ? Json(page.pageIndex) : Json(nullptr);
    out["page_count"] = page.pageCount;
    out["width"] = page.width;
    out["height"] = page.height;
    bool anyPolygon = false;
    for (const BlockResult& b : page.blocks) {
        anyPolygon = anyPolygon || !b.polygon.isEmpty();
    }
    out["model_settings"] = Json{
        {"use_doc_preprocessor", false},
        {"use_layout_detection", !(page.blocks.empty() && !page.spotting.empty())},
        {"use_chart_recognition", recognised(page, QLatin1String("chart"))},
        {"use_seal_recognition", recognised(page, QLatin1String("seal"))},
        {"use_ocr_for_image_block", false},
        {"format_block_content", false},
        {"merge_layout_blocks", true},
        {"markdown_ignore_labels", ignoredLabels(markdownLabels)},
        {"return_layout_polygon_points", anyPolygon},
    };

    Json blocks = Json::array();
    Json boxes = Json::array();
    Json folioBlocks = Json::array();
    for (size_t i = 0; i < page.blocks.size(); ++i) {
        const BlockResult& b = page.blocks[i];
        const int id = static_cast<int>(i);
        Json block;
        block["block_label"] = utf8(b.label);
        block["block_content"] = utf8(b.content);
        block["block_bbox"] = Json::array({b.box.x1, b.box.y1, b.box.x2, b.box.y2});
        block["block_id"] = id;
        block["block_order"] = b.order > 0 ? Json(b.order) : Json(nullptr);
        block["group_id"] = b.groupId >= 0 ? b.groupId : id;
        block["global_block_id"] = firstBlockId + id;
        block["global_group_id"] = firstBlockId + id;
        if (!b.polygon.isEmpty()) {
            block["block_polygon_points"] = points(b.polygon);
        }
        blocks.push_back(std::move(block));

        if (const int cls = classId(b.label); cls >= 0) {
            boxes.push_back(Json{
                {"cls_id", cls},
                {"label", utf8(b.label)},
                {"score", static_cast<double>(b.score)},
                {"coordinate", Json::array({static_cast<double>(b.box.x1), static_cast<double>(b.box.y1),
                                            static_cast<double>(b.box.x2), static_cast<double>(b.box.y2)})}});
        }
        folioBlocks.push_back(Json{{"block_id", id},
                                   {"score", static_cast<double>(b.score)},
                                   {"task", utf8(b.task)},
                                   {"n_tokens", b.nTokens},
                                   {"truncated", b.truncated},
                                   {"error", b.error.isEmpty() ? Json(nullptr) : Json(utf8(b.error))}});
    }
    out["parsing_res_list"] = std::move(blocks);
    if (!page.spotting.empty()) {
        Json polys = Json::array();
        Json texts = Json::array();
        for (const SpottedLine& line : page.spotting) {
            polys.push_back(points(line.quad));
            texts.push_back(utf8(line.text));
        }
        out["spotting_res"] = Json{{"rec_polys", std::move(polys)}, {"rec_texts", std::move(texts)}};
    }
    out["layout_det_res"] =
        Json{{"input_path", nullptr}, {"page_index", nullptr}, {"boxes", std::move(boxes)}};
    out["folio"] = Json{{"dpi", page.dpi},
                        {"timings",
                         {{"render_ms", page.timings.renderMs},
                          {"layout_preprocess_ms", page.timings.layoutPreprocessMs},
                          {"layout_ms", page.timings.layoutMs},
                          {"blocks_ms", page.timings.blocksMs},
                          {"recognition_ms", page.timings.recognitionMs}}},
                        {"blocks", std::move(folioBlocks)}};
    return out;
}

JsonWriter::JsonWriter(ExportOptions options)
    : StreamingWriter(std::move(options), exportSuffix(ExportFormat::Json), false) {}

QString JsonWriter::closing() {
    return pagesWritten() > 0 ? QStringLiteral("\n]\n") : QStringLiteral("]\n");
}

QString JsonWriter::pageText(const PageResult& page, const std::vector<QString>&, int firstBlockId,
                             int pagesBefore) {
    // json.dump(indent=4) of the array: each page object indented one level.
    const QString object = QString::fromStdString(
        jsonOfPage(page, firstBlockId, labels()).dump(4, ' ', false, Json::error_handler_t::replace));
    QString indented = QStringLiteral("    ") + object;
    indented.replace(QLatin1String("\n"), QLatin1String("\n    "));
    return (pagesBefore == 0 ? QStringLiteral("\n") : QStringLiteral(",\n")) + indented;
}

}  // namespace folio
