// Help > Keyboard Shortcuts: the main window's keys, read from its menus so that the list stays true as
// actions change, with the keys that act in one place only (the find bar, the document list).
#pragma once

#include <QDialog>
#include <QList>
#include <QString>

class QMenuBar;
class QTableWidget;

namespace folio {

class ShortcutsDialog : public QDialog {
    Q_OBJECT

public:
    struct Row {
        QString group;   // the menu, or where the key acts
        QString action;  // without its mnemonic
        QString keys;    // in the platform's words, several separated by commas
    };

    // The property of an action whose text changes (undo, redo) that names it in the list.
    static constexpr const char* kListedName = "listedName";

    // Every action of the menus (submenus included) that has a key, menu by menu in their order, then the
    // keys of single places.
    static QList<Row> rows(const QMenuBar* menus);

    explicit ShortcutsDialog(const QMenuBar* menus, QWidget* parent = nullptr);
    QTableWidget* table() const { return table_; }

private:
    QTableWidget* table_ = nullptr;
};

}  // namespace folio
