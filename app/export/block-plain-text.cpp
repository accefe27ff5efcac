#include "app/export/block-plain-text.h"

#include <QRegularExpression>
#include <algorithm>
#include <vector>

namespace folio {

namespace {

QString collapseSpaces(const QString& text) {
    static const QRegularExpression spaces(QStringLiteral("\\s+"));
    return QString(text).replace(spaces, QStringLiteral(" ")).trimmed();
}

QString decodeEntities(const QString& text) {
    static const QRegularExpression entity(
        QStringLiteral("&(#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z]{2,6});"));
    QString out;
    qsizetype last = 0;
    auto it = entity.globalMatch(text);
    while (it.hasNext()) {
        const QRegularExpressionMatch match = it.next();
        const QString name = match.captured(1);
        QString replacement;
        if (name.startsWith(QLatin1Char('#'))) {
            bool ok = false;
            const bool hex = name.size() > 1 && (name[1] == QLatin1Char('x') || name[1] == QLatin1Char('X'));
            const uint code = hex ? name.mid(2).toUInt(&ok, 16) : name.mid(1).toUInt(&ok, 10);
            if (ok && code > 0 && code <= 0x10FFFF && (code < 0xD800 || code > 0xDFFF)) {
                const char32_t c = code;
                replacement = QString::fromUcs4(&c, 1);
            }
        } else if (name == QLatin1String("amp")) {
            replacement = QStringLiteral("&");
        } else if (name == QLatin1String("lt")) {
            replacement = QStringLiteral("<");
        } else if (name == QLatin1String("gt")) {
            replacement = QStringLiteral(">");
        } else if (name == QLatin1String("quot")) {
            replacement = QStringLiteral("\"");
        } else if (name == QLatin1String("apos")) {
            replacement = QStringLiteral("'");
        } else if (name == QLatin1String("nbsp")) {
            replacement = QStringLiteral(" ");
        }
        if (replacement.isNull()) {
            continue;  // not an entity we know: kept as written
        }
        out += QStringView(text).mid(last, match.capturedStart() - last);
        out += replacement;
        last = match.capturedEnd();
    }
    out += QStringView(text).mid(last);
    return out;
}

// Backslash-escaped ASCII punctuation stands for itself, never for markup: it is hidden in private-use
// characters while markup is removed.
constexpr char16_t kHiddenPunctuation = 0xE000;

QString hideEscapes(const QString& text) {
    QString out;
    out.reserve(text.size());
    for (qsizetype i = 0; i < text.size(); ++i) {
        const char16_t next = i + 1 < text.size() ? text[i + 1].unicode() : 0;
        const bool punctuation = (next >= 0x21 && next <= 0x2F) || (next >= 0x3A && next <= 0x40) ||
                                 (next >= 0x5B && next <= 0x60) || (next >= 0x7B && next <= 0x7E);
        if (text[i] == QLatin1Char('\\') && punctuation) {
            out.append(QChar(static_cast<char16_t>(kHiddenPunctuation + next)));
            ++i;
        } else {
            out.append(text[i]);
        }
    }
    return out;
}

QString showEscapes(QString text) {
    for (QChar& c : text) {
        if (c.unicode() >= kHiddenPunctuation && c.unicode() < kHiddenPunctuation + 0x80) {
            c = QChar(static_cast<char16_t>(c.unicode() - kHiddenPunctuation));
        }
    }
    return text;
}

// One line of Markdown without its markup.
QString stripMarkdownLine(QString line) {
    static const QRegularExpression tableRule(
        QStringLiteral("^\\s*\\|?\\s*:?-+:?\\s*(\\|\\s*:?-+:?\\s*)*\\|?\\s*$"));
    static const QRegularExpression thematicBreak(QStringLiteral("^\\s*([-*_])(\\s*\\1){2,}\\s*$"));
    static const QRegularExpression pipes(QStringLiteral("\\s*\\|\\s*"));
    static const QRegularExpression heading(QStringLiteral("^\\s*#{1,6}\\s+"));
    static const QRegularExpression quote(QStringLiteral("^\\s*(>\\s?)+"));
    static const QRegularExpression bullet(QStringLiteral("^\\s*[-*+]\\s+"));
    static const QRegularExpression image(QStringLiteral("!\\[[^\\]]*\\]\\([^)]*\\)"));
    static const QRegularExpression link(QStringLiteral("\\[([^\\]]*)\\]\\([^)]*\\)"));
    static const QRegularExpression strong(QStringLiteral("(\\*\\*|__|~~)(?=\\S)(.+?)(?<=\\S)\\1"));
    static const QRegularExpression starEmphasis(
        QStringLiteral("(?<![\\w*])\\*(?=\\S)(.+?)(?<=\\S)\\*(?![\\w*])"));
    static const QRegularExpression underscoreEmphasis(
        QStringLiteral("(?<![\\w_])_(?=\\S)(.+?)(?<=\\S)_(?![\\w_])"));
    static const QRegularExpression code(QStringLiteral("`+([^`]+)`+"));
    static const QRegularExpression displayMath(QStringLiteral("\\$\\$(.+?)\\$\\$"));
    static const QRegularExpression inlineMath(QStringLiteral("(?<![\\\\$])\\$(?=\\S)([^$]+?)(?<=\\S)\\$"));
    static const QRegularExpression parenMath(QStringLiteral("\\\\\\((.+?)\\\\\\)"));
    static const QRegularExpression bracketMath(QStringLiteral("\\\\\\[(.+?)\\\\\\]"));

    if ((line.contains(QLatin1Char('|')) && tableRule.match(line).hasMatch()) ||
        thematicBreak.match(line).hasMatch()) {
        return {};
    }
    line = line.trimmed();
    line.replace(parenMath, QStringLiteral("\\1"));
    line.replace(bracketMath, QStringLiteral("\\1"));
    line = hideEscapes(line);
    if (line.startsWith(QLatin1Char('|'))) {
        line = line.mid(1);
        if (line.endsWith(QLatin1Char('|'))) {
            line.chop(1);
        }
        line.replace(pipes, QStringLiteral(" "));
    }
    line.remove(heading);
    line.remove(quote);
    line.remove(bullet);
    line.remove(image);
    line.replace(link, QStringLiteral("\\1"));
    line.replace(strong, QStringLiteral("\\2"));
    line.replace(starEmphasis, QStringLiteral("\\1"));
    line.replace(underscoreEmphasis, QStringLiteral("\\1"));
    line.replace(code, QStringLiteral("\\1"));
    line.replace(displayMath, QStringLiteral("\\1"));
    line.replace(inlineMath, QStringLiteral("\\1"));
    return collapseSpaces(showEscapes(line));
}

// A formula's LaTeX without its delimiters, split at its line breaks.
QStringList formulaLines(QString text) {
    text = text.trimmed();
    const std::pair<QLatin1String, QLatin1String> delimiters[] = {
        {QLatin1String("$$"), QLatin1String("$$")},
        {QLatin1String("\\["), QLatin1String("\\]")},
        {QLatin1String("\\("), QLatin1String("\\)")},
        {QLatin1String("$"), QLatin1String("$")},
    };
    for (const auto& [open, close] : delimiters) {
        if (text.size() >= open.size() + close.size() && text.startsWith(open) && text.endsWith(close)) {
            text = text.mid(open.size(), text.size() - open.size() - close.size());
            break;
        }
    }
    QStringList lines;
    for (const QString& part : text.split(QStringLiteral("\\\\"))) {
        const QString line = collapseSpaces(part);
        if (!line.isEmpty()) {
            lines.append(line);
        }
    }
    return lines;
}

}  // namespace

QString stripMarkup(const QString& text) {
    static const QRegularExpression lineEndTag(
        QStringLiteral(
            "<br\\s*/?>|<nl>|</?(p|div|tr|li|h[1-6]|table|thead|tbody|tfoot|caption|ul|ol|blockquote|"
            "pre)(\\s[^<>]*)?>"),
        QRegularExpression::CaseInsensitiveOption);
    static const QRegularExpression cellEndTag(QStringLiteral("</t[dh]\\s*>"),
                                               QRegularExpression::CaseInsensitiveOption);
    static const QRegularExpression tag(QStringLiteral("</?[A-Za-z][A-Za-z0-9]*(\\s[^<>]*)?/?>"));

    QString plain = text;
    plain.replace(lineEndTag, QStringLiteral("\n"));
    plain.replace(cellEndTag, QStringLiteral(" "));
    plain.remove(tag);
    plain = decodeEntities(plain);
    QStringList lines;
    for (const QString& line : plain.split(QLatin1Char('\n'))) {
        const QString stripped = stripMarkdownLine(line);
        if (!stripped.isEmpty()) {
            lines.append(stripped);
        }
    }
    return lines.join(QLatin1Char('\n'));
}

bool isFormulaBlock(const BlockResult& block) {
    return block.label == QLatin1String("display_formula") ||
           block.label == QLatin1String("inline_formula") || block.task.startsWith(QLatin1String("Formula"));
}

QStringList blockPlainLines(const BlockResult& block) {
    if (block.table && !block.table->cells.empty()) {
        std::vector<const TableCell*> cells;
        for (const TableCell& cell : block.table->cells) {
            cells.push_back(&cell);
        }
        std::stable_sort(cells.begin(), cells.end(), [](const TableCell* a, const TableCell* b) {
            return a->row != b->row ? a->row < b->row : a->column < b->column;
        });
        QStringList rows;
        int row = -1;
        QStringList words;
        for (const TableCell* cell : cells) {
            if (cell->row != row && !words.isEmpty()) {
                rows.append(words.join(QLatin1Char(' ')));
                words.clear();
            }
            row = cell->row;
            const QString text = collapseSpaces(stripMarkup(cell->text));
            if (!text.isEmpty()) {
                words.append(text);
            }
        }
        if (!words.isEmpty()) {
            rows.append(words.join(QLatin1Char(' ')));
        }
        return rows;
    }
    const QString& text = block.content.isEmpty() ? block.rawText : block.content;
    if (text.trimmed().isEmpty()) {
        return {};
    }
    if (isFormulaBlock(block)) {
        return formulaLines(text);
    }
    return stripMarkup(text).split(QLatin1Char('\n'), Qt::SkipEmptyParts);
}

}  // namespace folio
