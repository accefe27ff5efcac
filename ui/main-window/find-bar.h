// The bar under the document views that finds text in the document's results (Ctrl+F): the text, match
// case, previous and next, and where the current match stands among them ("3 of 12"). It drives a
// DocumentSearch; the main window goes to the block of each match the user asks for.
#pragma once

#include <QWidget>

class QCheckBox;
class QLabel;
class QLineEdit;
class QToolButton;

namespace folio {

class DocumentSearch;

class FindBar : public QWidget {
    Q_OBJECT

public:
    explicit FindBar(DocumentSearch& search, QWidget* parent = nullptr);

    // Shows the bar with its text selected and the keyboard in it; a hidden one searches its text again.
    void open();
    QLineEdit* lineEdit() const { return edit_; }
    QCheckBox* matchCase() const { return matchCase_; }
    QLabel* statusLabel() const { return status_; }
    QToolButton* nextButton() const { return next_; }
    QToolButton* previousButton() const { return previous_; }

Q_SIGNALS:
    // The query changed: the main window searches from the block in view (DocumentSearch::setQuery).
    void queryChanged(const QString& text, Qt::CaseSensitivity cs);
    void closed();

protected:
    void changeEvent(QEvent* event) override;
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    void retranslate();
    void updateStatus();
    void emitQuery();

    DocumentSearch& search_;
    QLineEdit* edit_ = nullptr;
    QCheckBox* matchCase_ = nullptr;
    QToolButton* previous_ = nullptr;
    QToolButton* next_ = nullptr;
    QToolButton* close_ = nullptr;
    QLabel* status_ = nullptr;
};

}  // namespace folio
