// Asks where to export a document and in which formats (Markdown with its images folder, JSON, HTML,
// searchable PDF, XLSX).
#pragma once

#include <QDialog>
#include <QList>

#include "app/export/document-writer.h"

class QCheckBox;
class QLineEdit;

namespace folio {

class ExportDialog : public QDialog {
    Q_OBJECT

public:
    ExportDialog(const QString& folder, const QList<ExportFormat>& formats, QWidget* parent = nullptr);

    QString folder() const;
    QList<ExportFormat> formats() const;

private:
    QLineEdit* folder_ = nullptr;
    QList<std::pair<ExportFormat, QCheckBox*>> boxes_;
};

QString exportFormatName(ExportFormat format);

}  // namespace folio
