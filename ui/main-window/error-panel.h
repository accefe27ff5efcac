// The non-modal list of what went wrong (documents, pages, blocks, the engine), newest last; it never
// interrupts the work. A problem that a setting may fix (a model that does not load, the device running out
// of memory, ...) carries that setting's key (app/settings/error-setting.h): the panel offers to open it with
// a button that names it, for the problem selected (a new one is selected as it comes), and on a
// double-click.
#pragma once

#include <QDockWidget>

class QListWidget;
class QPushButton;

namespace folio {

class ErrorPanel : public QDockWidget {
    Q_OBJECT

public:
    explicit ErrorPanel(QWidget* parent = nullptr);

    // A problem; `setting`: the settings dialog's key of the setting that may fix it (empty: none).
    void addError(const QString& message, const QString& setting = {});
    int count() const;
    QString message(int row) const;
    QString setting(int row) const;
    void clear();

    // The button that opens the selected problem's setting (hidden where it has none).
    QPushButton* settingButton() const { return settingButton_; }
    // The setting in words, as the button names it: "Settings › Engine › GPU memory utilization".
    static QString settingTitle(const QString& setting);

Q_SIGNALS:
    void countChanged(int count);
    // The panel was hidden and shows now, for something new.
    void opened();
    // The user asked for the setting of a problem.
    void settingRequested(const QString& setting);

protected:
    void changeEvent(QEvent* event) override;

private:
    void updateSettingButton();

    QPushButton* settingButton_ = nullptr;
    QPushButton* clearButton_ = nullptr;
    QListWidget* list_ = nullptr;
};

}  // namespace folio
