#include "ui/main-window/error-panel.h"

#include <QDateTime>
#include <QEvent>
#include <QHBoxLayout>
#include <QListWidget>
#include <QPushButton>
#include <QStyle>
#include <QVBoxLayout>

namespace folio {

ErrorPanel::ErrorPanel(QWidget* parent) : QDockWidget(tr("Problems"), parent) {
    setObjectName(QStringLiteral("problems"));
    auto* content = new QWidget(this);
    auto* layout = new QVBoxLayout(content);
    layout->setContentsMargins(4, 2, 4, 4);
    list_ = new QListWidget(content);
    list_->setWordWrap(true);
    list_->setAlternatingRowColors(true);
    list_->setSelectionMode(QAbstractItemView::ExtendedSelection);
    layout->addWidget(list_);
    auto* buttons = new QHBoxLayout;
    buttons->addStretch();
    clearButton_ = new QPushButton(tr("Clear"), content);
    connect(clearButton_, &QPushButton::clicked, this, &ErrorPanel::clear);
    buttons->addWidget(clearButton_);
    layout->addLayout(buttons);
    setWidget(content);
}

void ErrorPanel::addError(const QString& message) {
    auto* item = new QListWidgetItem(
        style()->standardIcon(QStyle::SP_MessageBoxWarning),
        QDateTime::currentDateTime().toString(QStringLiteral("HH:mm:ss  ")) + message, list_);
    item->setToolTip(message);
    item->setData(Qt::UserRole, message);
    list_->scrollToItem(item);
    if (!isVisible()) {
        show();
        Q_EMIT opened();
    }
    Q_EMIT countChanged(count());
}

int ErrorPanel::count() const {
    return list_->count();
}

QString ErrorPanel::message(int row) const {
    const QListWidgetItem* item = list_->item(row);
    return item != nullptr ? item->data(Qt::UserRole).toString() : QString();
}

void ErrorPanel::clear() {
    list_->clear();
    Q_EMIT countChanged(0);
}

void ErrorPanel::changeEvent(QEvent* event) {
    if (event->type() == QEvent::LanguageChange) {
        setWindowTitle(tr("Problems"));
        clearButton_->setText(tr("Clear"));
    }
    QDockWidget::changeEvent(event);
}

}  // namespace folio
