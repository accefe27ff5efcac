// Asks where to export a document, which of its pages ("1-3, 8"; all by default) and in which formats
// (Markdown with its images folder, JSON, HTML, searchable PDF, XLSX, DOCX).
#pragma once

#include <QDialog>
#include <QList>

#include "app/documents/page-range.h"
#include "app/export/document-writer.h"

class QCheckBox;
class QLabel;
class QLineEdit;

namespace folio {

class ExportDialog : public QDialog {
    Q_OBJECT

public:
    // pageCount: the document's pages, against which the pages field is checked.
    ExportDialog(const QString& folder, const QList<ExportFormat>& formats, int pageCount,
                 QWidget* parent = nullptr);

    QString folder() const;
    QList<ExportFormat> formats() const;
    // The pages asked for: every page where the field is empty.
    PageRange pages() const { return pages_; }
    QLineEdit* pagesField() const { return pagesField_; }
    QLabel* pagesError() const { return pagesError_; }

    // Keeps the dialog open, saying what is wrong, while the pages field does not read as pages of the
    // document.
    void accept() override;

private:
    QLineEdit* folder_ = nullptr;
    QLineEdit* pagesField_ = nullptr;
    QLabel* pagesError_ = nullptr;
    int pageCount_ = 0;
    PageRange pages_;
    QList<std::pair<ExportFormat, QCheckBox*>> boxes_;
};

QString exportFormatName(ExportFormat format);

}  // namespace folio
