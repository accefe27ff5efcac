// The interface language: the Simplified Chinese translation is compiled in and loads for zh_CN (and for the
// system locale when it is Chinese), English needs none, widgets retranslate when the language changes, and
// every string of the translation file is translated.
#include <QFile>
#include <QPushButton>
#include <QTemporaryDir>
#include <QXmlStreamReader>
#include <QtTest>

#include "chat-panel.h"
#include "engine-service.h"
#include "screenshot.h"
#include "settings-dialog.h"
#include "translation-loader.h"

using namespace folio;
using folio::test::saveScreenshot;

class TestTranslations : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void simplifiedChineseLoads() {
        TranslationLoader loader;
        QCOMPARE(loader.setLanguage(QStringLiteral("zh_CN")), QStringLiteral("zh_CN"));
        QCOMPARE(QCoreApplication::translate("folio::ChatPanel", "Send"), QStringLiteral("发送"));
        QCOMPARE(QCoreApplication::translate("folio::SettingsDialog", "Settings"), QStringLiteral("设置"));
        QCOMPARE(loader.setLanguage(QStringLiteral("en")), QStringLiteral("en"));
        QCOMPARE(QCoreApplication::translate("folio::ChatPanel", "Send"), QStringLiteral("Send"));
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
        QLocale::setDefault(QLocale(QLocale::Chinese, QLocale::China));
        QCOMPARE(loader.setLanguage(QString()), QLocale::system().language() == QLocale::Chinese
                                                    ? QStringLiteral("zh_CN")
                                                    : QStringLiteral("en"));
        QLocale::setDefault(QLocale::c());
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

QTEST_MAIN(TestTranslations)
#include "test-translations.moc"
