// Pages for the export tests, built from JSON specs: blocks with a label, a box and the model's text,
// finished as the pipeline finishes them.
#pragma once

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QString>
#include <initializer_list>
#include <utility>
#include <vector>

#include "app/documents/page-result.h"
#include "app/pipeline/block-content.h"

namespace folio::test {

inline QJsonObject readFixture(const QString& name) {
    QFile file(QStringLiteral(FOLIO_FIXTURES_ROOT "/export/") + name);
    if (!file.open(QIODevice::ReadOnly)) {
        qFatal("cannot read %s", qPrintable(file.fileName()));
    }
    return QJsonDocument::fromJson(file.readAll()).object();
}

inline BlockResult makeBlock(const QString& label, const QJsonArray& box, const QString& text) {
    BlockResult block;
    block.label = label;
    block.box = {box[0].toInt(), box[1].toInt(), box[2].toInt(), box[3].toInt()};
    block.rawText = text;
    finalizeBlock(block);
    return block;
}

inline BlockResult makeBlock(const QString& label, std::initializer_list<int> box, const QString& text) {
    QJsonArray array;
    for (const int v : box) {
        array.push_back(v);
    }
    return makeBlock(label, array, text);
}

inline PageResult makePage(std::vector<BlockResult> blocks, int pageIndex = 0, int width = 1000) {
    PageResult page;
    page.inputPath = QStringLiteral("/in/doc.pdf");
    page.pageIndex = pageIndex;
    page.pageCount = 3;
    page.width = width;
    page.height = 1400;
    page.blocks = std::move(blocks);
    for (size_t i = 0; i < page.blocks.size(); ++i) {
        page.blocks[i].id = static_cast<int>(i);
    }
    return page;
}

inline PageResult makePage(const QJsonArray& blocks, int pageIndex = 0, int width = 1000) {
    PageResult page;
    page.inputPath = QStringLiteral("/in/doc.pdf");
    page.pageIndex = pageIndex;
    page.pageCount = 3;
    page.width = width;
    page.height = 1400;
    for (const QJsonValue& value : blocks) {
        const QJsonObject b = value.toObject();
        page.blocks.push_back(makeBlock(b[QStringLiteral("label")].toString(),
                                        b[QStringLiteral("box")].toArray(),
                                        b[QStringLiteral("text")].toString()));
        page.blocks.back().id = static_cast<int>(page.blocks.size()) - 1;
    }
    return page;
}

}  // namespace folio::test
