// The interface language: the Simplified Chinese translation is compiled in and loads for zh_CN (and for a
// system locale in simplified Chinese), English needs none, widgets retranslate when the language changes,
// and every string of the translation file is translated.
#include <QApplication>
#include <QFile>
#include <QProcess>
#include <QPushButton>
#include <QTemporaryDir>
#include <QXmlStreamReader>
#include <QtTest>
#include <cstdio>

#include "app/i18n/translation-loader.h"
#include "engine/service/engine-service.h"
#include "screenshot.h"
#include "ui/chat/chat-panel.h"
#include "ui/settings/settings-dialog.h"

using namespace folio;
using folio::test::saveScreenshot;

namespace {
constexpr char kPrintSystemLanguage[] = "--print-system-language";
}  // namespace

class TestTranslations : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void simplifiedChineseLoads() {
        TranslationLoader loader;
        QCOMPARE(loader.setLanguage(QStringLiteral("zh_CN")), QStringLiteral("zh_CN"));
        QCOMPARE(QCoreApplication::translate("folio::ChatPanel", "Send"), QStringLiteral("发送"));
        QCOMPARE(QCoreApplication::translate("folio::SettingsDialog", "Settings"), QStringLiteral("设置"));
        QCOMPARE(QCoreApplication::translate("folio::ChatMessageView", "Thought for %1 tokens"),
                 QStringLiteral("思考了 %1 个 token"));
        QCOMPARE(
            QCoreApplication::translate("folio::EngineHost",
                                        "The chat model %1 and the OCR model %2 do not fit in the memory of "
                                        "%3 together: %4\n\n%2 runs alone and the chat uses it. To run "
                                        "both, free memory other programs use, lower the context length or "
                                        "the concurrent sequences, quantize the weights (WINT8, WINT4) or "
                                        "choose a smaller chat model.")
                .left(9),
            QStringLiteral("对话模型 %1 与"));
        QCOMPARE(loader.setLanguage(QStringLiteral("en")), QStringLiteral("en"));
        QCOMPARE(QCoreApplication::translate("folio::ChatPanel", "Send"), QStringLiteral("Send"));
    }

    // English's plural forms: "1 page", "2 pages", not "page(s)"; in every locale Folio has no translation
    // of.
    void englishPlurals_data() {
        QTest::addColumn<QString>("language");
        QTest::newRow("en") << QStringLiteral("en");
        QTest::newRow("de") << QStringLiteral("de_DE");
    }

    void englishPlurals() {
        QFETCH(QString, language);
        TranslationLoader loader;
        QCOMPARE(loader.setLanguage(language), QStringLiteral("en"));
        QCOMPARE(QCoreApplication::translate("folio::MainWindow", "%1 · %n page(s)", nullptr, 1).arg(u"Done"),
                 QStringLiteral("Done · 1 page"));
        QCOMPARE(
            QCoreApplication::translate("folio::MainWindow", "%1 · %n page(s)", nullptr, 12).arg(u"Done"),
            QStringLiteral("Done · 12 pages"));
        QCOMPARE(QCoreApplication::translate("folio::MainWindow", "Exported %n file(s)", nullptr, 1),
                 QStringLiteral("Exported 1 file"));
        QCOMPARE(QCoreApplication::translate("folio::FindBar", "%n match(es)", nullptr, 3),
                 QStringLiteral("3 matches"));
        loader.setLanguage(QStringLiteral("zh_CN"));
        QVERIFY(
            !QCoreApplication::translate("folio::FindBar", "%n match(es)", nullptr, 3).contains(u"match"));
    }

    void followsTheLocale() {
        TranslationLoader loader;
        QCOMPARE(loader.setLocale(QLocale(QLocale::Chinese, QLocale::China)), QStringLiteral("zh_CN"));
        QCOMPARE(
            loader.setLocale(QLocale(QLocale::Chinese, QLocale::SimplifiedChineseScript, QLocale::Singapore)),
            QStringLiteral("zh_CN"));
        // No traditional Chinese translation: English.
        QCOMPARE(
            loader.setLocale(QLocale(QLocale::Chinese, QLocale::TraditionalChineseScript, QLocale::Taiwan)),
            QStringLiteral("en"));
        QCOMPARE(loader.setLocale(QLocale(QLocale::German, QLocale::Germany)), QStringLiteral("en"));
    }

    // With no language set, the system locale decides: each row runs this binary again with the locale in
    // its environment, since Qt reads the system locale once per process.
    void followsTheSystemLocale_data() {
        QTest::addColumn<QString>("locale");
        QTest::addColumn<QString>("expected");
        QTest::newRow("zh_CN") << QStringLiteral("zh_CN.UTF-8") << QStringLiteral("zh_CN");
        QTest::newRow("zh_SG") << QStringLiteral("zh_SG.UTF-8") << QStringLiteral("zh_CN");
        QTest::newRow("zh_TW") << QStringLiteral("zh_TW.UTF-8") << QStringLiteral("en");
        QTest::newRow("de_DE") << QStringLiteral("de_DE.UTF-8") << QStringLiteral("en");
        QTest::newRow("C") << QStringLiteral("C") << QStringLiteral("en");
    }

    void followsTheSystemLocale() {
        QFETCH(QString, locale);
        QFETCH(QString, expected);
        QProcess child;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.remove(QStringLiteral("LANGUAGE"));
        env.insert(QStringLiteral("LC_ALL"), locale);
        env.insert(QStringLiteral("LANG"), locale);
        child.setProcessEnvironment(env);
        child.start(QCoreApplication::applicationFilePath(), {QString::fromLatin1(kPrintSystemLanguage)});
        QVERIFY(child.waitForFinished(30000));
        QCOMPARE(child.exitCode(), 0);
        QCOMPARE(QString::fromUtf8(child.readAllStandardOutput()).trimmed(), expected);
    }

    void widgetsRetranslate() {
        EngineService service;
        ChatPanel panel(service);
        QPushButton* send = nullptr;
        for (QPushButton* button : panel.findChildren<QPushButton*>()) {
            if (button->text() == QStringLiteral("Send")) {
                send = button;
            }
        }
        QVERIFY(send);
        TranslationLoader loader;
        loader.setLanguage(QStringLiteral("zh_CN"));
        QCoreApplication::processEvents();
        QCOMPARE(send->text(), QStringLiteral("发送"));
        panel.resize(420, 360);
        saveScreenshot(&panel, QStringLiteral("chat-panel-zh_CN"));
        QTemporaryDir dir;
        Settings settings(dir.filePath(QStringLiteral("zh.ini")));
        SettingsDialog dialog(settings);
        dialog.tabs()->setCurrentIndex(2);
        QCOMPARE(dialog.windowTitle(), QStringLiteral("设置"));
        saveScreenshot(&dialog, QStringLiteral("settings-zh_CN"));
        loader.setLanguage(QStringLiteral("en"));
        QCoreApplication::processEvents();
        QCOMPARE(send->text(), QStringLiteral("Send"));
        QCOMPARE(dialog.windowTitle(), QStringLiteral("Settings"));
    }

    // Every message in the translation file is translated (none left unfinished or empty).
    void everyStringIsTranslated() {
        QFile file(QStringLiteral(FOLIO_TS_FILE));
        QVERIFY(file.open(QIODevice::ReadOnly));
        QXmlStreamReader xml(&file);
        QStringList missing;
        QString source;
        int n = 0;
        while (!xml.atEnd()) {
            if (xml.readNext() != QXmlStreamReader::StartElement) {
                continue;
            }
            if (xml.name() == QLatin1String("source")) {
                source = xml.readElementText();
            } else if (xml.name() == QLatin1String("translation")) {
                const QString type = xml.attributes().value(QLatin1String("type")).toString();
                // Plural forms are <numerusform> children.
                const QString text = xml.readElementText(QXmlStreamReader::IncludeChildElements);
                if (type == QLatin1String("obsolete") || type == QLatin1String("vanished")) {
                    continue;
                }
                ++n;
                if (type == QLatin1String("unfinished") || text.isEmpty()) {
                    missing << source;
                }
            }
        }
        QVERIFY(!xml.hasError());
        QVERIFY(n > 50);
        QVERIFY2(missing.isEmpty(), qPrintable(missing.join(QStringLiteral(" | "))));
    }
};

// With kPrintSystemLanguage the binary prints the language the system locale gives and exits (for
// followsTheSystemLocale); otherwise it runs the tests.
int main(int argc, char** argv) {
    if (argc == 2 && qstrcmp(argv[1], kPrintSystemLanguage) == 0) {
        QCoreApplication app(argc, argv);
        TranslationLoader loader;
        std::printf("%s\n", qPrintable(loader.setLanguage(QString())));
        return 0;
    }
    QApplication app(argc, argv);
    app.setAttribute(Qt::AA_Use96Dpi, true);
    TestTranslations test;
    QTEST_SET_MAIN_SOURCE_PATH
    return QTest::qExec(&test, argc, argv);
}
#include "test-translations.moc"
