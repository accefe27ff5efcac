#include "app/export/xlsx-writer.h"

#include <xlsxwriter.h>

#include <QDir>
#include <QFile>
#include <QStringView>
#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <utility>

#include "app/export/cell-number.h"
#include "app/export/staged-file.h"
#include "engine/common/error.h"

namespace folio {

namespace {

constexpr int kMaxSheetNameLength = LXW_SHEETNAME_MAX;
constexpr qsizetype kMaxCellLength = 32767;  // characters a cell holds
// Column widths, in characters of the default font.
constexpr double kMinColumnWidth = 8;
constexpr double kMaxColumnWidth = 60;
constexpr double kColumnPadding = 2;
// Grids larger than this are not from a page: refused rather than tracked cell by cell.
constexpr qint64 kMaxGridCells = 4'000'000;
constexpr lxw_color_t kHeaderFill = 0xF2F2F2;

struct WorkbookDeleter {
    void operator()(lxw_workbook* workbook) const { lxw_workbook_free(workbook); }
};
using WorkbookHandle = std::unique_ptr<lxw_workbook, WorkbookDeleter>;

bool isWide(char32_t c) {
    return (c >= 0x1100 && c <= 0x115F) || (c >= 0x2E80 && c <= 0xA4CF) || (c >= 0xAC00 && c <= 0xD7A3) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0xFE30 && c <= 0xFE4F) || (c >= 0xFF00 && c <= 0xFF60) ||
           (c >= 0xFFE0 && c <= 0xFFE6) || (c >= 0x20000 && c <= 0x3FFFD);
}

// The width of the text's longest line in characters of the default font, East Asian wide ones counting two.
double displayWidth(const QString& text) {
    double widest = 0;
    for (const QString& line : text.split(QLatin1Char('\n'))) {
        double width = 0;
        for (const char32_t c : line.toUcs4()) {
            width += isWide(c) ? 2 : 1;
        }
        widest = std::max(widest, width);
    }
    return widest;
}

// Cell text as the file can hold it: no control characters but line breaks and tabs, within the length limit,
// not cut inside a surrogate pair.
QByteArray cellText(const QString& text) {
    QString clean;
    clean.reserve(text.size());
    for (const QChar c : text) {
        if (c == QLatin1Char('\n') || c == QLatin1Char('\t') || c.unicode() >= 0x20) {
            clean.append(c);
        }
    }
    if (clean.size() > kMaxCellLength) {
        qsizetype cut = kMaxCellLength;
        if (clean.at(cut - 1).isHighSurrogate()) {
            --cut;
        }
        clean.truncate(cut);
    }
    return clean.toUtf8();
}

std::string cellName(int row, int column) {
    char name[LXW_MAX_CELL_NAME_LENGTH] = {};
    lxw_rowcol_to_cell(name, static_cast<lxw_row_t>(row), static_cast<lxw_col_t>(column));
    return name;
}

// One workbook being built from kept tables; every libxlsxwriter failure becomes a folio::Error naming the
// target file.
class WorkbookBuilder {
public:
    WorkbookBuilder(QString target, const QString& path) : m_target(std::move(target)) {
        lxw_workbook_options options{};
        const QByteArray encoded = QFile::encodeName(path);
        m_workbook.reset(workbook_new_opt(encoded.constData(), &options));
        if (!m_workbook) {
            fail("cannot write \"", m_target.toStdString(), "\": the workbook could not be created");
        }
    }

    void addSheet(const QString& name, const TableGrid& table) {
        const QByteArray utf8Name = name.toUtf8();
        m_sheet = utf8Name.toStdString();
        check(workbook_validate_sheet_name(m_workbook.get(), utf8Name.constData()), "its name");
        lxw_worksheet* sheet = workbook_add_worksheet(m_workbook.get(), utf8Name.constData());
        if (!sheet) {
            fail("cannot write \"", m_target.toStdString(), "\": worksheet \"", m_sheet,
                 "\" could not be added");
        }
        const int nRows = std::min(table.nRows, static_cast<int>(LXW_ROW_MAX));
        const int nColumns = std::min(table.nColumns, static_cast<int>(LXW_COL_MAX));
        if (nRows <= 0 || nColumns <= 0) {
            return;
        }
        if (static_cast<qint64>(nRows) * nColumns > kMaxGridCells) {
            fail("cannot write \"", m_target.toStdString(), "\": worksheet \"", m_sheet, "\" has ", nRows,
                 "x", nColumns, " cells, more than ", kMaxGridCells);
        }
        std::vector<bool> taken(static_cast<std::size_t>(nRows) * static_cast<std::size_t>(nColumns), false);
        const auto at = [&](int row, int column) {
            return static_cast<std::size_t>(row) * static_cast<std::size_t>(nColumns) +
                   static_cast<std::size_t>(column);
        };
        const auto spanFree = [&](int row, int column, int rowSpan, int columnSpan) {
            for (int r = row; r < row + rowSpan; ++r) {
                for (int c = column; c < column + columnSpan; ++c) {
                    if (taken[at(r, c)]) {
                        return false;
                    }
                }
            }
            return true;
        };
        std::vector<double> widths(static_cast<std::size_t>(nColumns), 0);

        for (const TableCell& cell : table.cells) {
            // A malformed grid's cells outside it or on top of another are left out.
            if (cell.row < 0 || cell.row >= nRows || cell.column < 0 || cell.column >= nColumns ||
                taken[at(cell.row, cell.column)]) {
                continue;
            }
            int rowSpan = std::clamp(cell.rowSpan, 1, nRows - cell.row);
            int columnSpan = std::clamp(cell.columnSpan, 1, nColumns - cell.column);
            if (!spanFree(cell.row, cell.column, rowSpan, columnSpan)) {
                rowSpan = columnSpan = 1;
            }
            for (int r = cell.row; r < cell.row + rowSpan; ++r) {
                for (int c = cell.column; c < cell.column + columnSpan; ++c) {
                    taken[at(r, c)] = true;
                }
            }
            const QString text = cell.text.trimmed();
            const std::optional<CellNumber> number = parseCellNumber(text);
            const double width = displayWidth(text);
            const bool merged = rowSpan > 1 || columnSpan > 1;
            const Style style{cell.row == 0 && nRows > 1, merged,
                              text.contains(QLatin1Char('\n')) || width > kMaxColumnWidth,
                              number ? number->format() : QString()};
            lxw_format* format = this->format(style);
            const auto row = static_cast<lxw_row_t>(cell.row);
            const auto column = static_cast<lxw_col_t>(cell.column);
            if (merged) {
                check(
                    worksheet_merge_range(sheet, row, column, static_cast<lxw_row_t>(cell.row + rowSpan - 1),
                                          static_cast<lxw_col_t>(cell.column + columnSpan - 1), "", format),
                    "merging " + cellName(cell.row, cell.column) + ":" +
                        cellName(cell.row + rowSpan - 1, cell.column + columnSpan - 1));
            }
            if (number) {
                check(worksheet_write_number(sheet, row, column, number->value, format),
                      "cell " + cellName(cell.row, cell.column));
            } else if (!text.isEmpty()) {
                check(worksheet_write_string(sheet, row, column, cellText(text).constData(), format),
                      "cell " + cellName(cell.row, cell.column));
            } else if (!merged && style.header) {
                check(worksheet_write_blank(sheet, row, column, format),
                      "cell " + cellName(cell.row, cell.column));
            }
            if (columnSpan == 1) {
                auto& columnWidth = widths[static_cast<std::size_t>(cell.column)];
                columnWidth = std::max(columnWidth, width);
            }
        }
        for (int c = 0; c < nColumns; ++c) {
            const double width = std::clamp(widths[static_cast<std::size_t>(c)] + kColumnPadding,
                                            kMinColumnWidth, kMaxColumnWidth);
            check(worksheet_set_column(sheet, static_cast<lxw_col_t>(c), static_cast<lxw_col_t>(c), width,
                                       nullptr),
                  "the width of column " + std::to_string(c + 1));
        }
    }

    // Writes the file; the workbook is freed whatever the outcome.
    void close() {
        m_sheet.clear();
        const lxw_error error = workbook_close(m_workbook.release());
        if (error != LXW_NO_ERROR) {
            fail("cannot write \"", m_target.toStdString(), "\": ", lxw_strerror(error));
        }
    }

private:
    struct Style {
        bool header = false;
        bool merged = false;
        bool wrap = false;
        QString numberFormat;

        bool operator<(const Style& other) const {
            return std::tie(header, merged, wrap, numberFormat) <
                   std::tie(other.header, other.merged, other.wrap, other.numberFormat);
        }
    };

    lxw_format* format(const Style& style) {
        const auto found = m_formats.find(style);
        if (found != m_formats.end()) {
            return found->second;
        }
        lxw_format* format = workbook_add_format(m_workbook.get());
        if (!format) {
            fail("cannot write \"", m_target.toStdString(), "\": a cell format could not be added");
        }
        format_set_align(format, style.merged ? LXW_ALIGN_VERTICAL_CENTER : LXW_ALIGN_VERTICAL_TOP);
        if (style.merged) {
            format_set_align(format, LXW_ALIGN_CENTER);
        }
        if (style.header) {
            format_set_bold(format);
            format_set_bg_color(format, kHeaderFill);
            format_set_bottom(format, LXW_BORDER_THIN);
        }
        if (style.wrap) {
            format_set_text_wrap(format);
        }
        if (!style.numberFormat.isEmpty()) {
            format_set_num_format(format, style.numberFormat.toUtf8().constData());
        }
        m_formats.emplace(style, format);
        return format;
    }

    void check(lxw_error error, const std::string& what) const {
        if (error != LXW_NO_ERROR) {
            fail("cannot write \"", m_target.toStdString(), "\": worksheet \"", m_sheet, "\", ", what, ": ",
                 lxw_strerror(error));
        }
    }

    QString m_target;
    WorkbookHandle m_workbook;
    std::map<Style, lxw_format*> m_formats;  // owned by the workbook
    std::string m_sheet;                     // the worksheet being written, for messages
};

}  // namespace

XlsxWriter::XlsxWriter(ExportOptions options) : m_options(std::move(options)) {}

XlsxWriter::~XlsxWriter() = default;

void XlsxWriter::begin(const DocumentInfo& document) {
    discard();
    m_files.clear();
    const QString stem = document.stem.isEmpty() ? QStringLiteral("document") : document.stem;
    m_target = QDir(m_options.outputDir).absoluteFilePath(stem + exportSuffix(ExportFormat::Xlsx));
    m_staged = std::make_unique<StagedFile>(m_target);
}

void XlsxWriter::addPage(const PageResult& page) {
    if (!m_staged) {
        fail("XLSX: a page added outside begin() and finish()");
    }
    ++m_nPages;
    const int pageNumber = page.pageIndex >= 0 ? page.pageIndex + 1 : m_nPages;
    int nTables = 0;
    for (const BlockResult& block : page.blocks) {
        if (block.label != QLatin1String("table") && !block.table) {
            continue;
        }
        ++nTables;  // tables without a grid keep their number but get no sheet
        if (block.table && block.table->nRows > 0 && block.table->nColumns > 0) {
            m_sheets.push_back(
                {uniqueSheetName(QStringLiteral("p%1 table %2").arg(pageNumber).arg(nTables)), *block.table});
        }
    }
}

void XlsxWriter::finish() {
    if (!m_staged) {
        return;
    }
    try {
        if (!m_sheets.empty()) {
            m_staged->file().close();  // libxlsxwriter writes the file by its name
            writeWorkbook(m_staged->temporaryPath());
            m_staged->commit();
            m_files = {m_target};
        }
        discard();
    } catch (...) {
        discard();
        throw;
    }
}

void XlsxWriter::writeWorkbook(const QString& path) const {
    WorkbookBuilder workbook(m_target, path);
    for (const Sheet& sheet : m_sheets) {
        workbook.addSheet(sheet.name, sheet.table);
    }
    workbook.close();
}

void XlsxWriter::abort() {
    discard();
    m_files.clear();
}

QStringList XlsxWriter::files() const {
    return m_files;
}

QString XlsxWriter::uniqueSheetName(const QString& wanted) {
    // Excel's rules: at most 31 characters, none of []:*?/\, no apostrophe first or last.
    QString base;
    for (const QChar c : wanted) {
        base.append(QStringView(u"[]:*?/\\").contains(c) ? QLatin1Char('_') : c);
    }
    while (base.startsWith(QLatin1Char('\''))) {
        base.remove(0, 1);
    }
    while (base.endsWith(QLatin1Char('\''))) {
        base.chop(1);
    }
    if (base.isEmpty()) {
        base = QStringLiteral("table");
    }
    const auto fitted = [](const QString& name, qsizetype length) {
        QString cut = name.left(length);
        if (!cut.isEmpty() && cut.back().isHighSurrogate()) {
            cut.chop(1);
        }
        return cut.trimmed();
    };
    QString name = fitted(base, kMaxSheetNameLength);
    for (int n = 2; m_sheetNames.contains(name.toLower()); ++n) {
        const QString suffix = QStringLiteral(" (%1)").arg(n);
        name = fitted(base, kMaxSheetNameLength - suffix.size()) + suffix;
    }
    m_sheetNames.insert(name.toLower());
    return name;
}

void XlsxWriter::discard() {
    m_staged.reset();
    m_sheets.clear();
    m_sheetNames.clear();
    m_nPages = 0;
}

std::unique_ptr<DocumentWriter> makeXlsxWriter(const ExportOptions& options) {
    return std::make_unique<XlsxWriter>(options);
}

}  // namespace folio
