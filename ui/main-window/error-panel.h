// The non-modal list of what went wrong (documents, pages, blocks, the engine), newest last; it never
// interrupts the work.
#pragma once

#include <QDockWidget>

class QListWidget;
class QPushButton;

namespace folio {

class ErrorPanel : public QDockWidget {
    Q_OBJECT

public:
    explicit ErrorPanel(QWidget* parent = nullptr);

    void addError(const QString& message);
    int count() const;
    QString message(int row) const;
    void clear();

Q_SIGNALS:
    void countChanged(int count);
    // The panel was hidden and shows now, for something new.
    void opened();

protected:
    void changeEvent(QEvent* event) override;

private:
    QPushButton* clearButton_ = nullptr;
    QListWidget* list_ = nullptr;
};

}  // namespace folio
