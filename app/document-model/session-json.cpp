#include "app/document-model/session-json.h"

#include <QBuffer>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <algorithm>
#include <cstdint>

#include "engine/common/error.h"

namespace folio {

namespace {

constexpr int kVersion = 1;

const char* pageStateKey(PageState state) {
    switch (state) {
        case PageState::Pending:
            return "pending";
        case PageState::LaidOut:
        case PageState::Partial:
            return "partial";  // a run under way when the file was written stopped there
        case PageState::Done:
            return "done";
        case PageState::Failed:
            return "failed";
    }
    return "pending";
}

PageState pageStateOf(const QString& key) {
    if (key == QLatin1String("done")) {
        return PageState::Done;
    }
    if (key == QLatin1String("failed")) {
        return PageState::Failed;
    }
    if (key == QLatin1String("partial")) {
        return PageState::Partial;
    }
    return PageState::Pending;
}

QJsonArray boxJson(const BlockBox& box) {
    return {box.x1, box.y1, box.x2, box.y2};
}

QJsonArray polygonJson(const QPolygonF& polygon) {
    QJsonArray points;
    for (const QPointF& p : polygon) {
        points.append(QJsonArray{p.x(), p.y()});
    }
    return points;
}

QPolygonF polygonOf(const QJsonArray& points) {
    QPolygonF polygon;
    for (const QJsonValue& p : points) {
        const QJsonArray xy = p.toArray();
        polygon << QPointF(xy.at(0).toDouble(), xy.at(1).toDouble());
    }
    return polygon;
}

QString pngBase64(const QImage& image) {
    QByteArray bytes;
    QBuffer buffer(&bytes);
    buffer.open(QIODevice::WriteOnly);
    image.save(&buffer, "PNG");
    return QString::fromLatin1(bytes.toBase64());
}

QJsonObject blockJson(const BlockResult& b) {
    QJsonObject o{{QStringLiteral("id"), b.id},
                  {QStringLiteral("label"), b.label},
                  {QStringLiteral("score"), static_cast<double>(b.score)},
                  {QStringLiteral("box"), boxJson(b.box)},
                  {QStringLiteral("order"), b.order},
                  {QStringLiteral("group"), b.groupId},
                  {QStringLiteral("task"), b.task},
                  {QStringLiteral("raw"), b.rawText},
                  {QStringLiteral("content"), b.content},
                  {QStringLiteral("tokens"), b.nTokens},
                  {QStringLiteral("truncated"), b.truncated},
                  {QStringLiteral("error"), b.error},
                  {QStringLiteral("edited"), b.edited},
                  {QStringLiteral("drawn"), b.drawn}};
    if (!b.polygon.isEmpty()) {
        o.insert(QStringLiteral("polygon"), polygonJson(b.polygon));
    }
    if (b.table) {
        QJsonArray cells;
        for (const TableCell& c : b.table->cells) {
            cells.append(QJsonArray{c.row, c.column, c.rowSpan, c.columnSpan, c.text});
        }
        o.insert(QStringLiteral("table"), QJsonObject{{QStringLiteral("rows"), b.table->nRows},
                                                      {QStringLiteral("columns"), b.table->nColumns},
                                                      {QStringLiteral("cells"), cells}});
    }
    if (!b.image.isNull()) {
        o.insert(QStringLiteral("png"), pngBase64(b.image));
    }
    return o;
}

// A table grid read back is used as the views and exports use any grid (cells index rows and columns), so one
// whose cells lie outside it, or that is larger than any page holds, is dropped; the block keeps its text.
constexpr int kMaxTableSide = 10000;

bool gridHolds(const TableGrid& grid) {
    if (grid.nRows < 1 || grid.nColumns < 1 || grid.nRows > kMaxTableSide || grid.nColumns > kMaxTableSide ||
        static_cast<int64_t>(grid.cells.size()) > int64_t{grid.nRows} * grid.nColumns) {
        return false;
    }
    return std::all_of(grid.cells.begin(), grid.cells.end(), [&](const TableCell& c) {
        return c.row >= 0 && c.column >= 0 && c.rowSpan >= 1 && c.columnSpan >= 1 &&
               c.rowSpan <= grid.nRows - c.row && c.columnSpan <= grid.nColumns - c.column;
    });
}

BlockResult blockOf(const QJsonObject& o) {
    BlockResult b;
    b.id = o.value(QStringLiteral("id")).toInt();
    b.label = o.value(QStringLiteral("label")).toString();
    b.score = static_cast<float>(std::clamp(o.value(QStringLiteral("score")).toDouble(), 0.0, 1.0));
    const QJsonArray box = o.value(QStringLiteral("box")).toArray();
    b.box = {box.at(0).toInt(), box.at(1).toInt(), box.at(2).toInt(), box.at(3).toInt()};
    b.polygon = polygonOf(o.value(QStringLiteral("polygon")).toArray());
    b.order = o.value(QStringLiteral("order")).toInt();
    b.groupId = o.value(QStringLiteral("group")).toInt(-1);
    b.task = o.value(QStringLiteral("task")).toString();
    b.rawText = o.value(QStringLiteral("raw")).toString();
    b.content = o.value(QStringLiteral("content")).toString();
    b.nTokens = o.value(QStringLiteral("tokens")).toInt();
    b.truncated = o.value(QStringLiteral("truncated")).toBool();
    b.error = o.value(QStringLiteral("error")).toString();
    b.edited = o.value(QStringLiteral("edited")).toBool();
    b.drawn = o.value(QStringLiteral("drawn")).toBool();
    if (o.contains(QStringLiteral("table"))) {
        const QJsonObject t = o.value(QStringLiteral("table")).toObject();
        TableGrid grid;
        grid.nRows = t.value(QStringLiteral("rows")).toInt();
        grid.nColumns = t.value(QStringLiteral("columns")).toInt();
        for (const QJsonValue& v : t.value(QStringLiteral("cells")).toArray()) {
            const QJsonArray c = v.toArray();
            grid.cells.push_back(
                {c.at(0).toInt(), c.at(1).toInt(), c.at(2).toInt(1), c.at(3).toInt(1), c.at(4).toString()});
        }
        if (gridHolds(grid)) {
            b.table = std::move(grid);
        }
    }
    if (o.contains(QStringLiteral("png"))) {
        b.image.loadFromData(QByteArray::fromBase64(o.value(QStringLiteral("png")).toString().toLatin1()),
                             "PNG");
    }
    return b;
}

QJsonObject pageJson(const PageEntry& p) {
    const PageResult& r = p.result;
    QJsonArray blocks;
    for (const BlockResult& b : r.blocks) {
        blocks.append(blockJson(b));
    }
    QJsonArray spotting;
    for (const SpottedLine& line : r.spotting) {
        spotting.append(QJsonObject{{QStringLiteral("text"), line.text},
                                    {QStringLiteral("quad"), polygonJson(line.quad)}});
    }
    return {{QStringLiteral("width"), p.size.width()},
            {QStringLiteral("height"), p.size.height()},
            {QStringLiteral("state"), QString::fromLatin1(pageStateKey(p.state))},
            {QStringLiteral("edited"), p.edited},
            {QStringLiteral("input"), r.inputPath},
            {QStringLiteral("pageIndex"), r.pageIndex},
            {QStringLiteral("pageCount"), r.pageCount},
            {QStringLiteral("renderedWidth"), r.width},
            {QStringLiteral("renderedHeight"), r.height},
            {QStringLiteral("dpi"), r.dpi},
            {QStringLiteral("error"), r.error},
            {QStringLiteral("blocks"), blocks},
            {QStringLiteral("spotting"), spotting}};
}

PageEntry pageOf(const QJsonObject& o) {
    PageEntry p;
    p.size = QSize(o.value(QStringLiteral("width")).toInt(-1), o.value(QStringLiteral("height")).toInt(-1));
    p.state = pageStateOf(o.value(QStringLiteral("state")).toString());
    p.edited = o.value(QStringLiteral("edited")).toBool();
    PageResult& r = p.result;
    r.inputPath = o.value(QStringLiteral("input")).toString();
    r.pageIndex = o.value(QStringLiteral("pageIndex")).toInt(-1);
    r.pageCount = o.value(QStringLiteral("pageCount")).toInt(1);
    r.width = o.value(QStringLiteral("renderedWidth")).toInt();
    r.height = o.value(QStringLiteral("renderedHeight")).toInt();
    r.dpi = o.value(QStringLiteral("dpi")).toInt();
    r.error = o.value(QStringLiteral("error")).toString();
    for (const QJsonValue& b : o.value(QStringLiteral("blocks")).toArray()) {
        r.blocks.push_back(blockOf(b.toObject()));
    }
    for (const QJsonValue& v : o.value(QStringLiteral("spotting")).toArray()) {
        const QJsonObject line = v.toObject();
        r.spotting.push_back({line.value(QStringLiteral("text")).toString(),
                              polygonOf(line.value(QStringLiteral("quad")).toArray())});
    }
    return p;
}

}  // namespace

QByteArray sessionJson(const std::vector<SessionDocument>& documents) {
    QJsonArray docs;
    for (const SessionDocument& d : documents) {
        QJsonArray pages;
        for (const PageEntry& p : d.pages) {
            pages.append(pageJson(p));
        }
        docs.append(
            QJsonObject{{QStringLiteral("path"), d.path},
                        {QStringLiteral("size"), static_cast<double>(d.fileSize)},
                        {QStringLiteral("modified"), d.fileModified.toUTC().toString(Qt::ISODateWithMs)},
                        {QStringLiteral("pages"), pages}});
    }
    const QJsonObject root{{QStringLiteral("folioSession"), kVersion}, {QStringLiteral("documents"), docs}};
    return QJsonDocument(root).toJson(QJsonDocument::Compact);
}

std::vector<SessionDocument> parseSessionJson(const QByteArray& json, const QString& where) {
    QJsonParseError error{};
    const QJsonDocument doc = QJsonDocument::fromJson(json, &error);
    if (doc.isNull()) {
        fail(where.toStdString(), ": not a session file (", error.errorString().toStdString(), " at byte ",
             error.offset, ")");
    }
    const QJsonObject root = doc.object();
    const int version = root.value(QStringLiteral("folioSession")).toInt(0);
    if (version != kVersion) {
        fail(where.toStdString(), ": session file version ", version, ", expected ", kVersion);
    }
    std::vector<SessionDocument> documents;
    for (const QJsonValue& v : root.value(QStringLiteral("documents")).toArray()) {
        const QJsonObject o = v.toObject();
        SessionDocument d;
        d.path = o.value(QStringLiteral("path")).toString();
        d.fileSize = o.value(QStringLiteral("size")).toInteger(-1);  // -1 where it is not a whole number
        d.fileModified =
            QDateTime::fromString(o.value(QStringLiteral("modified")).toString(), Qt::ISODateWithMs);
        for (const QJsonValue& p : o.value(QStringLiteral("pages")).toArray()) {
            d.pages.push_back(pageOf(p.toObject()));
        }
        if (!d.path.isEmpty()) {
            documents.push_back(std::move(d));
        }
    }
    return documents;
}

}  // namespace folio
