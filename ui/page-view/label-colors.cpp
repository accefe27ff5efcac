#include "ui/page-view/label-colors.h"

#include <QCoreApplication>
#include <QHash>

namespace folio {

QColor labelColor(const QString& label) {
    // Related labels share a hue: text blues, titles purples, tables greens, formulas oranges, figures teals,
    // page furniture greys.
    static const QHash<QString, QColor> kColors = {
        {QStringLiteral("text"), QColor(0x2f, 0x6f, 0xdf)},
        {QStringLiteral("ocr"), QColor(0x2f, 0x6f, 0xdf)},
        {QStringLiteral("vertical_text"), QColor(0x3b, 0x82, 0xf6)},
        {QStringLiteral("content"), QColor(0x1d, 0x4e, 0xd8)},
        {QStringLiteral("abstract"), QColor(0x25, 0x63, 0xeb)},
        {QStringLiteral("reference"), QColor(0x0e, 0x74, 0x90)},
        {QStringLiteral("reference_content"), QColor(0x0e, 0x74, 0x90)},
        {QStringLiteral("doc_title"), QColor(0x9d, 0x17, 0x4d)},
        {QStringLiteral("paragraph_title"), QColor(0x7c, 0x3a, 0xed)},
        {QStringLiteral("figure_title"), QColor(0xa8, 0x55, 0xf7)},
        {QStringLiteral("table"), QColor(0x16, 0xa3, 0x4a)},
        {QStringLiteral("display_formula"), QColor(0xea, 0x58, 0x0c)},
        {QStringLiteral("inline_formula"), QColor(0xf9, 0x73, 0x16)},
        {QStringLiteral("formula_number"), QColor(0xfb, 0x92, 0x3c)},
        {QStringLiteral("algorithm"), QColor(0xca, 0x8a, 0x04)},
        {QStringLiteral("image"), QColor(0x0d, 0x94, 0x88)},
        {QStringLiteral("chart"), QColor(0xdb, 0x27, 0x77)},
        {QStringLiteral("seal"), QColor(0xdc, 0x26, 0x26)},
        {QStringLiteral("header"), QColor(0x64, 0x74, 0x8b)},
        {QStringLiteral("header_image"), QColor(0x64, 0x74, 0x8b)},
        {QStringLiteral("footer"), QColor(0x64, 0x74, 0x8b)},
        {QStringLiteral("footer_image"), QColor(0x64, 0x74, 0x8b)},
        {QStringLiteral("number"), QColor(0x94, 0xa3, 0xb8)},
        {QStringLiteral("footnote"), QColor(0x47, 0x55, 0x69)},
        {QStringLiteral("vision_footnote"), QColor(0x47, 0x55, 0x69)},
        {QStringLiteral("aside_text"), QColor(0x78, 0x71, 0x6c)},
    };
    const auto it = kColors.constFind(label);
    if (it != kColors.constEnd()) {
        return *it;
    }
    return QColor::fromHsv(static_cast<int>(qHash(label) % 360), 160, 200);
}

QString labelTitle(const QString& label) {
    // The layout models' labels by name, translated; another label shows as its name, capitalised.
    static const QHash<QString, const char*> kTitles = {
        {QStringLiteral("abstract"), QT_TRANSLATE_NOOP("folio::LayoutLabel", "Abstract")},
        {QStringLiteral("algorithm"), QT_TRANSLATE_NOOP("folio::LayoutLabel", "Algorithm")},
        {QStringLiteral("aside_text"), QT_TRANSLATE_NOOP("folio::LayoutLabel", "Aside text")},
        {QStringLiteral("chart"), QT_TRANSLATE_NOOP("folio::LayoutLabel", "Chart")},
        {QStringLiteral("content"), QT_TRANSLATE_NOOP("folio::LayoutLabel", "Content")},
        {QStringLiteral("display_formula"), QT_TRANSLATE_NOOP("folio::LayoutLabel", "Display formula")},
        {QStringLiteral("doc_title"), QT_TRANSLATE_NOOP("folio::LayoutLabel", "Doc title")},
        {QStringLiteral("figure_title"), QT_TRANSLATE_NOOP("folio::LayoutLabel", "Figure title")},
        {QStringLiteral("footer"), QT_TRANSLATE_NOOP("folio::LayoutLabel", "Footer")},
        {QStringLiteral("footer_image"), QT_TRANSLATE_NOOP("folio::LayoutLabel", "Footer image")},
        {QStringLiteral("footnote"), QT_TRANSLATE_NOOP("folio::LayoutLabel", "Footnote")},
        {QStringLiteral("formula_number"), QT_TRANSLATE_NOOP("folio::LayoutLabel", "Formula number")},
        {QStringLiteral("header"), QT_TRANSLATE_NOOP("folio::LayoutLabel", "Header")},
        {QStringLiteral("header_image"), QT_TRANSLATE_NOOP("folio::LayoutLabel", "Header image")},
        {QStringLiteral("image"), QT_TRANSLATE_NOOP("folio::LayoutLabel", "Image")},
        {QStringLiteral("inline_formula"), QT_TRANSLATE_NOOP("folio::LayoutLabel", "Inline formula")},
        {QStringLiteral("number"), QT_TRANSLATE_NOOP("folio::LayoutLabel", "Number")},
        {QStringLiteral("paragraph_title"), QT_TRANSLATE_NOOP("folio::LayoutLabel", "Paragraph title")},
        {QStringLiteral("reference"), QT_TRANSLATE_NOOP("folio::LayoutLabel", "Reference")},
        {QStringLiteral("reference_content"), QT_TRANSLATE_NOOP("folio::LayoutLabel", "Reference content")},
        {QStringLiteral("seal"), QT_TRANSLATE_NOOP("folio::LayoutLabel", "Seal")},
        {QStringLiteral("table"), QT_TRANSLATE_NOOP("folio::LayoutLabel", "Table")},
        {QStringLiteral("text"), QT_TRANSLATE_NOOP("folio::LayoutLabel", "Text")},
        {QStringLiteral("vertical_text"), QT_TRANSLATE_NOOP("folio::LayoutLabel", "Vertical text")},
        {QStringLiteral("vision_footnote"), QT_TRANSLATE_NOOP("folio::LayoutLabel", "Vision footnote")},
    };
    const auto it = kTitles.constFind(label);
    if (it != kTitles.constEnd()) {
        return QCoreApplication::translate("folio::LayoutLabel", *it);
    }
    QString title = label;
    title.replace(QLatin1Char('_'), QLatin1Char(' '));
    if (!title.isEmpty()) {
        title[0] = title[0].toUpper();
    }
    return title;
}

}  // namespace folio
