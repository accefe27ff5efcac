// A block's request as both the document pipeline and the desktop's re-run of a block make it: a formula's
// crop trimmed to its ink, the label's pixel bounds, the block's token budget fitted to the context,
// spotting's special tokens kept; and the task table the two share.
#include <QPainter>
#include <QtTest>

#include "app/pipeline/block-request.h"
#include "app/pipeline/block-task.h"

using namespace folio;

namespace {

// White, with a black square of `ink` pixels at (x, y).
QImage pageWithInk(int width, int height, int x, int y, int ink) {
    QImage image(width, height, QImage::Format_RGB888);
    image.fill(Qt::white);
    QPainter painter(&image);
    painter.fillRect(x, y, ink, ink, Qt::black);
    return image;
}

}  // namespace

class TestBlockRequest : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void formulaCropsAreTrimmedToTheirInk_data() {
        QTest::addColumn<QString>("task");
        QTest::addColumn<QSize>("expected");
        QTest::newRow("formula") << QString::fromLatin1(kFormulaTask) << QSize(20, 20);
        QTest::newRow("text") << QString::fromLatin1(kOcrTask) << QSize(100, 60);
        QTest::newRow("table") << QString::fromLatin1(kTableTask) << QSize(100, 60);
    }

    void formulaCropsAreTrimmedToTheirInk() {
        QFETCH(QString, task);
        QFETCH(QSize, expected);
        QCOMPARE(cropForTask(pageWithInk(100, 60, 30, 20, 20), task).size(), expected);
    }

    void aBlankFormulaCropStaysWhole() {
        QImage blank(50, 40, QImage::Format_RGB888);
        blank.fill(Qt::white);
        QCOMPARE(cropForTask(blank, QString::fromLatin1(kFormulaTask)).size(), QSize(50, 40));
    }

    void theRequestCarriesTheTaskBoundsAndBudget() {
        RecognitionOptions recognition;
        recognition.maxNewTokens = 321;
        recognition.labelPixels.insert(QStringLiteral("table"), PixelBounds{1000, 2000});
        SamplingParams sampling;
        sampling.temperature = 0.5F;
        const QImage crop = pageWithInk(64, 48, 0, 0, 10);

        const RequestSpec table = blockRequest(crop, QStringLiteral("table"), QString::fromLatin1(kTableTask),
                                               recognition, sampling);
        const auto* task = std::get_if<ImageTask>(&table.input);
        QVERIFY(task);
        QCOMPARE(QString::fromStdString(task->task), QString::fromLatin1(kTableTask));
        QCOMPARE(task->images.size(), size_t{1});
        QCOMPARE(task->images[0].width, 64);
        QCOMPARE(task->images[0].height, 48);
        QCOMPARE(table.options.max_tokens.value_or(0), int64_t{321});
        QVERIFY(table.options.fit_max_tokens);
        QCOMPARE(table.options.sampling.temperature, 0.5F);
        QVERIFY(table.options.skip_special_tokens);
        QVERIFY(table.image_pixels.has_value());
        QCOMPARE(table.image_pixels->min_pixels, int64_t{1000});
        QCOMPARE(table.image_pixels->max_pixels, int64_t{2000});

        const RequestSpec text =
            blockRequest(crop, QStringLiteral("text"), QString::fromLatin1(kOcrTask), recognition, sampling);
        QCOMPARE(text.image_pixels->min_pixels, recognition.pixels.minPixels);
        QCOMPARE(text.image_pixels->max_pixels, recognition.pixels.maxPixels);

        const RequestSpec spotting = blockRequest(crop, QStringLiteral("spotting"),
                                                  QString::fromLatin1(kSpottingTask), recognition, sampling);
        QVERIFY(!spotting.options.skip_special_tokens);
        QCOMPARE(spotting.image_pixels->max_pixels, kSpottingPixels.maxPixels);
    }

    // The desktop's task choices give the prompts the pipeline gives those labels.
    void theTaskChoicesMatchTheLabelsTasks() {
        RecognitionOptions all;
        all.chartRecognition = true;
        all.sealRecognition = true;
        for (const BlockTaskChoice& choice : blockTaskChoices()) {
            QCOMPARE(taskForLabel(choice.label, all), choice.prompt);
            QCOMPARE(findBlockTask(choice.prompt), &choice);
            QCOMPARE(findBlockTask(choice.name.toUpper()), &choice);
        }
        QCOMPARE(findBlockTask(QStringLiteral("Poetry:")), nullptr);
    }
};

QTEST_MAIN(TestBlockRequest)
#include "test-block-request.moc"
