#include "ui/main-window/find-bar.h"

#include <QCheckBox>
#include <QEvent>
#include <QHBoxLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QStyle>
#include <QToolButton>

#include "app/document-model/document-search.h"

namespace folio {

FindBar::FindBar(DocumentSearch& search, QWidget* parent) : QWidget(parent), search_(search) {
    setObjectName(QStringLiteral("findBar"));
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(6, 3, 6, 3);
    edit_ = new QLineEdit(this);
    edit_->setObjectName(QStringLiteral("findText"));
    edit_->setClearButtonEnabled(true);
    edit_->setMinimumWidth(220);
    edit_->installEventFilter(this);
    previous_ = new QToolButton(this);
    previous_->setObjectName(QStringLiteral("findPrevious"));
    previous_->setArrowType(Qt::UpArrow);
    next_ = new QToolButton(this);
    next_->setObjectName(QStringLiteral("findNext"));
    next_->setArrowType(Qt::DownArrow);
    matchCase_ = new QCheckBox(this);
    matchCase_->setObjectName(QStringLiteral("findMatchCase"));
    status_ = new QLabel(this);
    status_->setObjectName(QStringLiteral("findStatus"));
    close_ = new QToolButton(this);
    close_->setObjectName(QStringLiteral("findClose"));
    close_->setIcon(style()->standardIcon(QStyle::SP_TitleBarCloseButton));
    close_->setAutoRaise(true);
    layout->addWidget(edit_);
    layout->addWidget(previous_);
    layout->addWidget(next_);
    layout->addWidget(matchCase_);
    layout->addWidget(status_, 1);
    layout->addWidget(close_);

    connect(edit_, &QLineEdit::textChanged, this, &FindBar::emitQuery);
    connect(matchCase_, &QCheckBox::toggled, this, &FindBar::emitQuery);
    connect(edit_, &QLineEdit::returnPressed, &search_, &DocumentSearch::next);
    connect(next_, &QToolButton::clicked, &search_, &DocumentSearch::next);
    connect(previous_, &QToolButton::clicked, &search_, &DocumentSearch::previous);
    connect(close_, &QToolButton::clicked, this, [this] {
        hide();
        Q_EMIT closed();
    });
    connect(&search_, &DocumentSearch::changed, this, &FindBar::updateStatus);
    retranslate();
    updateStatus();
}

void FindBar::open() {
    const bool reopened = !isVisible();
    show();
    edit_->setFocus(Qt::ShortcutFocusReason);
    edit_->selectAll();
    // The text kept from before is searched again: its marks come back and the view goes to its match.
    if (reopened && !edit_->text().isEmpty()) {
        emitQuery();
    }
}

void FindBar::emitQuery() {
    Q_EMIT queryChanged(edit_->text(), matchCase_->isChecked() ? Qt::CaseSensitive : Qt::CaseInsensitive);
}

bool FindBar::eventFilter(QObject* watched, QEvent* event) {
    if (watched == edit_ && event->type() == QEvent::KeyPress) {
        const auto* key = static_cast<QKeyEvent*>(event);
        if (key->key() == Qt::Key_Escape) {
            hide();
            Q_EMIT closed();
            return true;
        }
        // Shift+Enter goes back, as Enter goes on.
        if ((key->key() == Qt::Key_Return || key->key() == Qt::Key_Enter) &&
            key->modifiers().testFlag(Qt::ShiftModifier)) {
            search_.previous();
            return true;
        }
    }
    return QWidget::eventFilter(watched, event);
}

void FindBar::updateStatus() {
    const bool any = search_.count() > 0;
    next_->setEnabled(any);
    previous_->setEnabled(any);
    if (search_.text().isEmpty()) {
        status_->clear();
    } else if (!any) {
        status_->setText(search_.document() < 0 ? tr("No document") : tr("Not found"));
    } else if (search_.currentIndex() < 0) {
        status_->setText(tr("%n match(es)", nullptr, search_.count()));
    } else {
        status_->setText(tr("%1 of %2").arg(search_.currentIndex() + 1).arg(search_.count()));
    }
    // The text field turns red where nothing matches, as in other applications' find bars.
    edit_->setStyleSheet(!search_.text().isEmpty() && !any
                             ? QStringLiteral("QLineEdit { background: #f8d7da; color: #58151c; }")
                             : QString());
}

void FindBar::retranslate() {
    edit_->setPlaceholderText(tr("Find in the results"));
    edit_->setAccessibleName(tr("Find in the results"));
    previous_->setToolTip(tr("Previous match (Shift+F3)"));
    previous_->setAccessibleName(tr("Previous match"));
    next_->setToolTip(tr("Next match (F3)"));
    next_->setAccessibleName(tr("Next match"));
    matchCase_->setText(tr("Match case"));
    close_->setToolTip(tr("Close the find bar (Esc)"));
    close_->setAccessibleName(tr("Close the find bar"));
    updateStatus();
}

void FindBar::changeEvent(QEvent* event) {
    if (event->type() == QEvent::LanguageChange) {
        retranslate();
    }
    QWidget::changeEvent(event);
}

}  // namespace folio
