#include "ui/main-window/shortcuts-dialog.h"

#include <QAction>
#include <QDialogButtonBox>
#include <QHeaderView>
#include <QKeySequence>
#include <QMenu>
#include <QMenuBar>
#include <QTableWidget>
#include <QVBoxLayout>

namespace folio {

namespace {

// A menu or action text as read: "&Find…" is "Find…", "&&" an ampersand.
QString withoutMnemonic(QString text) {
    QString out;
    out.reserve(text.size());
    for (qsizetype i = 0; i < text.size(); ++i) {
        if (text[i] == u'&' && i + 1 < text.size()) {
            ++i;  // the character after it stands, an ampersand included
        }
        out += text[i];
    }
    return out;
}

void addMenu(const QMenu* menu, const QString& group, QList<ShortcutsDialog::Row>& rows) {
    for (const QAction* a : menu->actions()) {
        if (a->isSeparator()) {
            continue;
        }
        if (const QMenu* sub = a->menu()) {
            addMenu(sub, group, rows);
            continue;
        }
        QStringList keys;
        for (const QKeySequence& key : a->shortcuts()) {
            keys << key.toString(QKeySequence::NativeText);
        }
        if (!keys.isEmpty()) {
            // Undo and redo name their command in their text ("Undo Edit block 2"): their listed name stands.
            const QString listed = a->property(ShortcutsDialog::kListedName).toString();
            rows.append({group, listed.isEmpty() ? withoutMnemonic(a->text()) : listed,
                         keys.join(QStringLiteral(", "))});
        }
    }
}

}  // namespace

QList<ShortcutsDialog::Row> ShortcutsDialog::rows(const QMenuBar* menus) {
    QList<Row> rows;
    for (const QAction* a : menus->actions()) {
        if (const QMenu* menu = a->menu()) {
            addMenu(menu, withoutMnemonic(a->text()), rows);
        }
    }
    const auto key = [](Qt::Key k, Qt::KeyboardModifiers m = Qt::NoModifier) {
        return QKeySequence(m | k).toString(QKeySequence::NativeText);
    };
    const QString findBar = tr("Find bar");
    rows.append({findBar, tr("Next match"), key(Qt::Key_Return)});
    rows.append({findBar, tr("Previous match"), key(Qt::Key_Return, Qt::ShiftModifier)});
    rows.append({findBar, tr("Close the find bar"), key(Qt::Key_Escape)});
    rows.append({tr("Document list"), tr("Close the selected document"), key(Qt::Key_Delete)});
    return rows;
}

ShortcutsDialog::ShortcutsDialog(const QMenuBar* menus, QWidget* parent) : QDialog(parent) {
    setWindowTitle(tr("Keyboard Shortcuts"));
    const QList<Row> all = rows(menus);
    table_ = new QTableWidget(static_cast<int>(all.size()), 3, this);
    table_->setObjectName(QStringLiteral("shortcuts"));
    table_->setHorizontalHeaderLabels({tr("Where"), tr("Action"), tr("Keys")});
    table_->verticalHeader()->hide();
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table_->setSelectionMode(QAbstractItemView::NoSelection);
    table_->setFocusPolicy(Qt::NoFocus);
    table_->setAlternatingRowColors(true);
    for (int r = 0; r < all.size(); ++r) {
        const Row& row = all[r];
        // The group is named on its first row only, so that the list reads as sections.
        const bool first = r == 0 || all[r - 1].group != row.group;
        table_->setItem(r, 0, new QTableWidgetItem(first ? row.group : QString()));
        table_->setItem(r, 1, new QTableWidgetItem(row.action));
        table_->setItem(r, 2, new QTableWidgetItem(row.keys));
    }
    table_->resizeColumnsToContents();
    table_->horizontalHeader()->setStretchLastSection(true);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(table_);
    layout->addWidget(buttons);
    resize(560, 620);
}

}  // namespace folio
