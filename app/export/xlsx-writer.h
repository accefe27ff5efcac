// The XLSX workbook of a document's tables: one worksheet for each table block that has a grid, in document
// order, named "p3 table 2" for the second table on page 3, with merged cells for spans, plain numbers as
// numbers and a bold first row. Written as OUTPUT_DIR/STEM.xlsx; a document without tables writes no file.
#pragma once

#include <QSet>
#include <memory>
#include <vector>

#include "app/export/document-writer.h"

namespace folio {

class StagedFile;

class XlsxWriter final : public DocumentWriter {
public:
    explicit XlsxWriter(ExportOptions options);
    ~XlsxWriter() override;
    XlsxWriter(const XlsxWriter&) = delete;
    XlsxWriter& operator=(const XlsxWriter&) = delete;

    ExportFormat format() const override { return ExportFormat::Xlsx; }
    // Checks that the workbook's file can be made.
    void begin(const DocumentInfo& document) override;
    // Keeps the page's tables; the workbook is written in finish().
    void addPage(const PageResult& page) override;
    // Writes the workbook; with no tables, writes nothing and files() is empty.
    void finish() override;
    void abort() override;
    QStringList files() const override;

private:
    struct Sheet {
        QString name;
        TableGrid table;
    };

    QString uniqueSheetName(const QString& wanted);
    void writeWorkbook(const QString& path) const;
    void discard();

    ExportOptions m_options;
    QString m_target;
    std::unique_ptr<StagedFile> m_staged;
    std::vector<Sheet> m_sheets;
    QSet<QString> m_sheetNames;  // lower case: sheet names are unique without regard to case
    int m_nPages = 0;
    QStringList m_files;
};

std::unique_ptr<DocumentWriter> makeXlsxWriter(const ExportOptions& options);

}  // namespace folio
