// The interface language: Folio's translations (compiled into the binary from translations/*.ts) and Qt's own
// for the chosen language, installed on the application. It follows the system locale unless the settings
// name a language, and can switch while the app runs (widgets retranslate on QEvent::LanguageChange).
#pragma once

#include <QLocale>
#include <QObject>
#include <QString>
#include <QStringList>
#include <QTranslator>

namespace folio {

class TranslationLoader : public QObject {
    Q_OBJECT

public:
    explicit TranslationLoader(QObject* parent = nullptr);
    ~TranslationLoader() override;

    // Installs the translations of `language` ("en", "zh_CN"), or of the system locale where it is empty;
    // returns the language in use ("en" where Folio has no translation of the locale's).
    QString setLanguage(const QString& language);
    // The same for a given locale (tests).
    QString setLocale(const QLocale& locale);
    QString language() const { return language_; }

    // The languages Folio ships, each with its own name ("English", "简体中文").
    static QStringList availableLanguages();
    static QString nativeName(const QString& language);

private:
    void remove();

    QTranslator folio_;
    QTranslator qt_;
    bool folioInstalled_ = false;
    bool qtInstalled_ = false;
    QString language_ = QStringLiteral("en");
};

}  // namespace folio
