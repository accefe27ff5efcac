// Block crops, stacking, tasks and spotting answers as PaddleOCR-VL's pipeline makes them.
#include <QPainter>
#include <QTest>

#include "app/pipeline/block-crop.h"
#include "app/pipeline/block-task.h"
#include "app/pipeline/spotting.h"

using namespace folio;

Q_DECLARE_METATYPE(std::vector<int>)

namespace {

QImage gradientPage(int w, int h) {
    QImage page(w, h, QImage::Format_RGB888);
    for (int y = 0; y < h; ++y) {
        for (int x = 0; x < w; ++x) {
            page.setPixelColor(x, y, QColor(x % 256, y % 256, (x + y) % 256));
        }
    }
    return page;
}

}  // namespace

class TestBlockCrop : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void tasks_data() {
        QTest::addColumn<QString>("label");
        QTest::addColumn<bool>("charts");
        QTest::addColumn<bool>("seals");
        QTest::addColumn<QString>("task");
        QTest::addColumn<bool>("image");
        QTest::newRow("text") << "text" << false << false << "OCR:" << false;
        QTest::newRow("paragraph_title") << "paragraph_title" << false << false << "OCR:" << false;
        QTest::newRow("table") << "table" << false << false << "Table Recognition:" << false;
        QTest::newRow("display_formula")
            << "display_formula" << false << false << "Formula Recognition:" << false;
        QTest::newRow("inline_formula")
            << "inline_formula" << false << false << "Formula Recognition:" << false;
        QTest::newRow("formula_number") << "formula_number" << false << false << "OCR:" << false;
        QTest::newRow("chart off") << "chart" << false << false << "" << true;
        QTest::newRow("chart on") << "chart" << true << false << "Chart Recognition:" << false;
        QTest::newRow("seal off") << "seal" << false << false << "" << true;
        QTest::newRow("seal on") << "seal" << false << true << "Seal Recognition:" << true;
        QTest::newRow("image") << "image" << true << true << "" << true;
        QTest::newRow("header_image") << "header_image" << false << false << "" << true;
        QTest::newRow("footer_image") << "footer_image" << false << false << "" << true;
        QTest::newRow("spotting") << "spotting" << false << false << "Spotting:" << false;
    }
    void tasks() {
        QFETCH(QString, label);
        QFETCH(bool, charts);
        QFETCH(bool, seals);
        QFETCH(QString, task);
        QFETCH(bool, image);
        RecognitionOptions options;
        options.chartRecognition = charts;
        options.sealRecognition = seals;
        QCOMPARE(taskForLabel(label, options), task);
        QCOMPARE(savedAsImage(label, options), image);
        QCOMPARE(stackable(label, options), !task.isEmpty() && label != QLatin1String("table"));
    }

    void pixelBounds() {
        RecognitionOptions options;
        QCOMPARE(pixelBoundsForLabel("text", options).minPixels, 112896);
        QCOMPARE(pixelBoundsForLabel("text", options).maxPixels, 1003520);
        QCOMPARE(pixelBoundsForLabel("spotting", options).maxPixels, 1605632);
        options.labelPixels.insert("table", {200000, 2000000});
        QCOMPARE(pixelBoundsForLabel("table", options).maxPixels, 2000000);
        QCOMPARE(pixelBoundsForLabel("text", options).maxPixels, 1003520);
    }

    void exactSlice() {
        const QImage page = gradientPage(300, 200);
        const QImage crop = cropBlock(page, {10, 20, 110, 70});
        QCOMPARE(crop.size(), QSize(100, 50));
        QCOMPARE(crop.pixelColor(0, 0), page.pixelColor(10, 20));
        QCOMPARE(crop.pixelColor(99, 49), page.pixelColor(109, 69));
        // Clipped to the page, and nothing for a box outside it.
        QCOMPARE(cropBlock(page, {250, 150, 400, 300}).size(), QSize(50, 50));
        QVERIFY(cropBlock(page, {300, 0, 350, 10}).isNull());
    }

    void polygonOutsidePaintedWhite() {
        const QImage page = gradientPage(200, 200);
        // A triangle over the box's lower-left half.
        const QPolygonF triangle({QPointF(50, 50), QPointF(50, 150), QPointF(150, 150)});
        const QImage crop = cropBlock(page, {50, 50, 150, 150}, triangle);
        QCOMPARE(crop.size(), QSize(100, 100));
        QCOMPARE(crop.pixelColor(90, 5), QColor(Qt::white));         // above the diagonal
        QCOMPARE(crop.pixelColor(5, 90), page.pixelColor(55, 140));  // inside
    }

    void marginTrimmedToInk() {
        QImage formula(120, 60, QImage::Format_RGB888);
        formula.fill(QColor(250, 250, 250));
        QPainter painter(&formula);
        painter.fillRect(30, 10, 40, 25, QColor(20, 20, 20));
        painter.end();
        const QImage trimmed = cropMargin(formula);
        QCOMPARE(trimmed.size(), QSize(40, 25));
        QCOMPARE(trimmed.pixelColor(0, 0), QColor(20, 20, 20));
        QImage blank(50, 50, QImage::Format_RGB888);
        blank.fill(Qt::white);
        QCOMPARE(cropMargin(blank).size(), QSize(50, 50));
    }

    void stackAlignments() {
        QImage wide(100, 10, QImage::Format_RGB888);
        wide.fill(Qt::black);
        QImage narrow(40, 20, QImage::Format_RGB888);
        narrow.fill(Qt::red);
        const QImage center = stackImages({wide, narrow}, {StackAlign::Center});
        QCOMPARE(center.size(), QSize(100, 30));
        QCOMPARE(center.pixelColor(70, 20), QColor(Qt::white));
        QCOMPARE(center.pixelColor(30, 20), QColor(Qt::red));
        QCOMPARE(center.pixelColor(29, 20), QColor(Qt::white));
        const QImage right = stackImages({wide, narrow}, {StackAlign::Right});
        QCOMPARE(right.pixelColor(99, 25), QColor(Qt::red));
        QCOMPARE(right.pixelColor(59, 25), QColor(Qt::white));
        const QImage left = stackImages({wide, narrow}, {StackAlign::Left});
        QCOMPARE(left.pixelColor(0, 25), QColor(Qt::red));
        QCOMPARE(left.pixelColor(40, 25), QColor(Qt::white));
    }

    void stacking_data() {
        QTest::addColumn<QStringList>("labels");
        QTest::addColumn<QList<QRect>>("boxes");
        QTest::addColumn<std::vector<int>>("order");
        QTest::addColumn<std::vector<int>>("groups");
        // Two text blocks side by side with a small gap stack; the title stays alone.
        QTest::newRow("side by side")
            << QStringList{"paragraph_title", "text", "text"}
            << QList<QRect>{QRect(0, 0, 400, 30), QRect(0, 40, 190, 100), QRect(200, 40, 190, 100)}
            << std::vector<int>{0, 1, 2} << std::vector<int>{-1, 1, 1};
        // A gap of 30% of the wider block or more keeps them apart.
        QTest::newRow("gap too wide")
            << QStringList{"text", "text"} << QList<QRect>{QRect(0, 0, 100, 100), QRect(131, 0, 100, 100)}
            << std::vector<int>{0, 1} << std::vector<int>{-1, -1};
        // One under the other, left-aligned only, their joint box touching a table: stacked; the table
        // inside the group's span comes after the group.
        QTest::newRow("under, beside a table")
            << QStringList{"text", "table", "text"}
            << QList<QRect>{QRect(0, 0, 300, 50), QRect(310, 0, 200, 200), QRect(0, 60, 320, 50)}
            << std::vector<int>{0, 2, 1} << std::vector<int>{0, 0, -1};
        // The same without the table: not stacked.
        QTest::newRow("under, nothing beside")
            << QStringList{"text", "text"} << QList<QRect>{QRect(0, 0, 300, 50), QRect(0, 60, 320, 50)}
            << std::vector<int>{0, 1} << std::vector<int>{-1, -1};
        // Aligned on both sides: not stacked.
        QTest::newRow("both sides aligned")
            << QStringList{"text", "image", "text"}
            << QList<QRect>{QRect(0, 0, 300, 50), QRect(250, 40, 100, 30), QRect(0, 60, 300, 50)}
            << std::vector<int>{0, 1, 2} << std::vector<int>{-1, -1, -1};
        // A stack three times as tall as wide or more stays apart.
        QTest::newRow("too tall") << QStringList{"text", "text"}
                                  << QList<QRect>{QRect(0, 0, 50, 100), QRect(60, 0, 50, 100)}
                                  << std::vector<int>{0, 1} << std::vector<int>{-1, -1};
    }
    void stacking() {
        QFETCH(QStringList, labels);
        QFETCH(QList<QRect>, boxes);
        QFETCH(std::vector<int>, order);
        QFETCH(std::vector<int>, groups);
        const RecognitionOptions options;
        std::vector<QString> l;
        std::vector<BlockBox> b;
        std::vector<bool> s;
        std::vector<QSize> sizes;
        for (qsizetype i = 0; i < labels.size(); ++i) {
            l.push_back(labels[i]);
            const QRect& r = boxes[i];
            b.push_back({r.x(), r.y(), r.x() + r.width(), r.y() + r.height()});
            s.push_back(stackable(labels[i], options));
            sizes.push_back(r.size());
        }
        const StackPlan plan = planStacks(l, b, s, sizes);
        QCOMPARE(plan.entries.size(), order.size());
        for (size_t i = 0; i < order.size(); ++i) {
            QCOMPARE(plan.entries[i].block, order[i]);
            QCOMPARE(plan.entries[i].group, groups[i]);
        }
    }

    void spotting() {
        const QString answer = QStringLiteral(
            "<|TEXT_START|>Hello<|TEXT_END|><|LOC_BEGIN|><|LOC_100|><|LOC_200|><|LOC_300|><|LOC_200|>"
            "<|LOC_300|><|LOC_250|><|LOC_100|><|LOC_250|><|LOC_END|>"
            "<|TEXT_START|> short <|TEXT_END|><|LOC_BEGIN|><|LOC_1|><|LOC_2|><|LOC_END|>"
            "<|TEXT_START|>世界<|TEXT_END|><|LOC_BEGIN|><|LOC_0|><|LOC_0|><|LOC_1000|><|LOC_0|><|LOC_1000|>"
            "<|LOC_1000|><|LOC_0|><|LOC_1000|><|LOC_END|>");
        const SpottingResult result = parseSpotting(answer, 2000, 1000);
        QCOMPARE(result.lines.size(), size_t{2});
        QCOMPARE(result.lines[0].text, QStringLiteral("Hello"));
        QCOMPARE(result.lines[0].quad.size(), 4);
        QCOMPARE(result.lines[0].quad[0], QPointF(200, 200));
        QCOMPARE(result.lines[0].quad[2], QPointF(600, 250));
        QCOMPARE(result.lines[1].text, QStringLiteral("世界"));
        QCOMPARE(result.lines[1].quad[2], QPointF(2000, 1000));
        QCOMPARE(result.text, QStringLiteral("Hello\n\n世界"));
        QVERIFY(parseSpotting("no markup at all", 10, 10).lines.empty());
    }
};

QTEST_GUILESS_MAIN(TestBlockCrop)
#include "test-block-crop.moc"
